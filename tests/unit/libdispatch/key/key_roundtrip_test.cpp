// Printing and parsing are inverse: parse(print(k)) == k for every valid key and
// print(parse(s)) == s for every printed line; the shorthand and the bundled shape list parse to
// the lines design.md gives.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <variant>

#include "key/gemm_key.hpp"
#include "support/parsed_key.hpp"

namespace kd {
namespace {

using test::parsed_key;

// Random valid keys: every accepted dtype combination and precision class, small and 64-bit-sized
// dimensions, padded leading dimensions, strided batches, device parts whose names hold blanks.
class RandomKeys {
public:
  explicit RandomKeys(std::uint64_t seed) : rng_(seed) {}

  GemmKey next() {
    GemmKey k;
    static constexpr std::array<DType, 3> kTypes{DType::f16, DType::bf16, DType::f32};
    k.a = k.b = kTypes[pick(3)];
    k.c = (k.a != DType::f32 && coin()) ? DType::f32 : k.a;
    k.compute = (k.a == DType::f16 && k.c == DType::f16 && coin()) ? ComputeType::f16
                                                                     : ComputeType::f32;
    k.precision = k.compute == ComputeType::f16 ? PrecisionClass::f16
                  : coin()                       ? PrecisionClass::tf32
                                                 : PrecisionClass::f32;
    k.ta = coin() ? Transpose::T : Transpose::N;
    k.tb = coin() ? Transpose::T : Transpose::N;
    k.m = dim();
    k.n = dim();
    k.k = dim();
    k.lda = padded(min_lda(k));
    k.ldb = padded(min_ldb(k));
    k.ldc = padded(k.m);
    if (pick(3) == 0) {
      k.batch = 2 + static_cast<std::int64_t>(pick(100000));
      k.stride_a = stride();
      k.stride_b = stride();
      k.stride_c = stride();
    }
    k.epilogue = coin() ? Epilogue::bias : Epilogue::none;
    k.beta_zero = coin();
    if (coin()) k.device = device();
    return k;
  }

private:
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  bool coin() { return pick(2) == 1; }
  std::int64_t in_range(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

  // Mostly GEMM-sized, sometimes up to the 64-bit range (leaving room for padding).
  std::int64_t dim() {
    switch (pick(4)) {
      case 0: return in_range(1, 16);
      case 1: return in_range(1, 200000);
      case 2: return in_range(std::int64_t{1} << 31, std::int64_t{1} << 40);
      default: return in_range(1, std::numeric_limits<std::int64_t>::max() - (1 << 20));
    }
  }
  std::int64_t padded(std::int64_t minimum) {
    return coin() ? minimum : minimum + in_range(1, 1 << 20);
  }
  std::int64_t stride() {
    return coin() ? 0 : in_range(1, std::numeric_limits<std::int64_t>::max());
  }

  DevicePart device() {
    static constexpr std::array<std::string_view, 7> kArchs{"sm_80", "sm_86",  "sm_89", "sm_90",
                                                            "sm_90a", "sm_100", "sm_120f"};
    DevicePart d;
    d.arch = std::string(kArchs[pick(kArchs.size())]);
    // Printable ASCII but the double quote, blanks included (leading, trailing, repeated), and
    // characters that mean something elsewhere in a line: = # '.
    const std::size_t length = 1 + pick(40);
    for (std::size_t i = 0; i < length; ++i) {
      char ch = static_cast<char>(' ' + pick(95));
      if (ch == '"') ch = ' ';
      d.gpu += ch;
    }
    d.sms = static_cast<int>(in_range(1, std::numeric_limits<int>::max()));
    return d;
  }

  std::mt19937_64 rng_;
};

TEST(KeyRoundTrip, RandomKeysPrintParseAndReprint) {
  RandomKeys keys(20240611);
  constexpr int kKeys = 6000;
  int with_device = 0, batched = 0, tf32 = 0, huge = 0;
  for (int i = 0; i < kKeys; ++i) {
    const GemmKey k = keys.next();
    const std::string line = k.device ? k.full_line() : k.shape_line();
    const GemmKey back = parsed_key(line);
    ASSERT_EQ(back, k) << line;
    ASSERT_EQ(back.device ? back.full_line() : back.shape_line(), line);
    ASSERT_EQ(back.hash(), k.hash());
    with_device += k.device ? 1 : 0;
    batched += k.batch > 1 ? 1 : 0;
    tf32 += k.precision == PrecisionClass::tf32 ? 1 : 0;
    huge += k.m > (std::int64_t{1} << 40) ? 1 : 0;
  }
  // The generator covers what the test claims to cover.
  EXPECT_GT(with_device, kKeys / 4);
  EXPECT_GT(batched, kKeys / 5);
  EXPECT_GT(tf32, kKeys / 8);
  EXPECT_GT(huge, kKeys / 8);
}

TEST(KeyRoundTrip, DesignDocumentLineIsCanonical) {
  const std::string line =
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
      "ldc=4096 batch=1 epilogue=none beta0=1";
  const GemmKey k = parsed_key(line);
  EXPECT_EQ(k.a, DType::bf16);
  EXPECT_EQ(k.c, DType::bf16);
  EXPECT_EQ(k.ta, Transpose::T);
  EXPECT_EQ(k.m, 4096);
  EXPECT_EQ(k.n, 16);
  EXPECT_TRUE(k.beta_zero);
  EXPECT_EQ(k.precision, PrecisionClass::f32);
  EXPECT_FALSE(k.device.has_value());
  EXPECT_EQ(k.shape_line(), line);
}

TEST(KeyRoundTrip, FullLineWithDevicePartAndPrecision) {
  const std::string line =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=777 n=333 k=555 lda=800 ldb=333 ldc=777 "
      "batch=8 stride_a=444000 stride_b=0 stride_c=621591 epilogue=bias beta0=0 precision=tf32 "
      "arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
  const GemmKey k = parsed_key(line);
  ASSERT_TRUE(k.device.has_value());
  EXPECT_EQ(k.device->arch, "sm_90");
  EXPECT_EQ(k.device->gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(k.device->sms, 132);
  EXPECT_EQ(k.batch, 8);
  EXPECT_EQ(k.stride_c, 621591);
  EXPECT_EQ(k.precision, PrecisionClass::tf32);
  EXPECT_EQ(k.epilogue, Epilogue::bias);
  EXPECT_EQ(k.full_line(), line);
  EXPECT_EQ(k.shape_line(), line.substr(0, line.find(" arch=")));
}

TEST(KeyRoundTrip, LinearShorthandExpandsToTheDesignLine) {
  const GemmKey k = parsed_key("linear dtype=bf16 tokens=16 in=4096 out=4096");
  EXPECT_EQ(k.shape_line(),
            "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
            "ldc=4096 batch=1 epilogue=none beta0=1");
}

TEST(KeyRoundTrip, LinearShorthandMapsOutTokensInAndBias) {
  const GemmKey k = parsed_key("  linear dtype=f16 tokens=7 in=4096 out=14336 bias=1 batch=1 ");
  EXPECT_EQ(k.shape_line(),
            "gemm a=f16 b=f16 c=f16 compute=f32 ta=T tb=N m=14336 n=7 k=4096 lda=4096 ldb=4096 "
            "ldc=14336 batch=1 epilogue=bias beta0=1");
  EXPECT_EQ(parsed_key("linear dtype=f32 tokens=1 in=2 out=3 bias=0").epilogue, Epilogue::none);
}

TEST(KeyRoundTrip, BundledLlamaShapeListParsesAndRoundTrips) {
  const char* source_dir = std::getenv("KD_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "ctest sets KD_SOURCE_DIR to the source root";
  const std::filesystem::path path =
      std::filesystem::path(source_dir) / "tools" / "shapes" / "llama3-8b.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::string line;
  int keys = 0;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const GemmKey k = parsed_key(line);
    EXPECT_EQ(k.shape_line(), line);
    ++keys;
  }
  EXPECT_GE(keys, 40);
}

TEST(KeyRoundTrip, LargestValuesRoundTrip) {
  const std::string max = std::to_string(std::numeric_limits<std::int64_t>::max());
  const std::string line = "gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=" + max + " n=" + max +
                           " k=" + max + " lda=" + max + " ldb=" + max + " ldc=" + max +
                           " batch=" + max + " stride_a=" + max + " stride_b=" + max +
                           " stride_c=" + max +
                           " epilogue=none beta0=0 arch=sm_100 gpu=\"x\" sms=2147483647";
  const GemmKey k = parsed_key(line);
  EXPECT_EQ(k.m, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(k.precision, PrecisionClass::f16);
  EXPECT_EQ(k.device->sms, std::numeric_limits<int>::max());
  EXPECT_EQ(k.full_line(), line);
}

}  // namespace
}  // namespace kd
