// kdctl verify and kdctl bench on a GPU, run as the real kdctl on a cache holding records of
// kernels this test compiles with NVRTC for device 0: a correct naive GEMM, and one that writes
// zeros (which the gate must fail). verify re-gates them, reports, and evicts the failure (not with
// --dry-run); bench prints its table and writes a PNG chart whose header this test reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiled_record.hpp"
#include "cuda/device.hpp"
#include "kdctl_gpu_fixtures.hpp"
#include "kdctl_runner.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

const std::string& kGood = kShape512;  // the naive kernel's plan covers it
const std::string& kBad = kShape256;
const std::string kUntuned =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=1 "
    "epilogue=none beta0=1";

constexpr const char* kPlan =
    R"(// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0})";
const std::string kNaiveSource = naive_f32_kernel(kPlan);  // correct
const std::string kZerosSource = zeros_kernel(kPlan);       // wrong: writes every output, all zeros

class KdctlOnGpu : public KdctlCacheOnGpu {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    dev_ = query_device(0);
    CacheWriter writer(cache());  // closed before kdctl opens the cache
    writer.commit_record(compiled_record(on_device(kGood, dev_), kNaiveSource, dev_.arch, "gpu-kdctl-test"));
    writer.commit_record(compiled_record(on_device(kBad, dev_), kZerosSource, dev_.arch, "gpu-kdctl-test"));
  }
};

TEST_F(KdctlOnGpu, VerifyEvictsTheRecordThatFailsTheGate) {
  const KdctlRun dry = kdctl({"verify", "--dry-run"});
  std::printf("%s", dry.out.c_str());
  EXPECT_EQ(dry.rc, 1) << dry.out << dry.err;  // some failed
  EXPECT_NE(dry.out.find("verifying 2 records for " + dev_.name), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("us vs cuBLAS"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find(kBad), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("1 passed, 1 failed (dry run: nothing evicted)"), std::string::npos) << dry.out;
  EXPECT_EQ(stored_shapes().size(), 2u);

  const KdctlRun real = kdctl({"verify"});
  EXPECT_EQ(real.rc, 1) << real.out << real.err;
  EXPECT_NE(real.out.find("1 passed, 1 failed (evicted)"), std::string::npos) << real.out;
  EXPECT_EQ(stored_shapes(), std::vector<std::string>{kGood});

  const KdctlRun again = kdctl({"verify"});
  EXPECT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("1 passed, 0 failed"), std::string::npos) << again.out;
}

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return v;
}

// CRC-32 (ISO 3309, as PNG chunks use it) of bytes[at, at + n).
std::uint32_t crc32(const std::string& bytes, std::size_t at, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = at; i < at + n; ++i) {
    c ^= static_cast<unsigned char>(bytes[i]);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

// Checks the PNG's structure (signature; chunks whose lengths fit and whose CRCs match; IHDR first,
// then IDAT, IEND last) and returns IHDR's width and height. The layout itself is png_chart.cpp's.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& png) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::vector<std::string> types;
  std::size_t at = 8;
  while (at + 12 <= png.size()) {
    const std::uint32_t length = big_endian(png, at);
    if (at + 12 + length > png.size()) break;
    types.push_back(png.substr(at + 4, 4));
    EXPECT_EQ(crc32(png, at + 4, 4 + length), big_endian(png, at + 8 + length)) << types.back() << " CRC";
    at += 12 + length;
  }
  EXPECT_EQ(at, png.size()) << "a chunk overruns the file or trailing bytes follow IEND";
  EXPECT_GE(types.size(), 3u);
  if (types.size() < 3 || big_endian(png, 8) != 13) return {0, 0};
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  EXPECT_NE(std::find(types.begin(), types.end(), "IDAT"), types.end());
  EXPECT_EQ(png[24], 8);  // bit depth
  EXPECT_EQ(png[25], 2);  // colour type: RGB
  return {big_endian(png, 16), big_endian(png, 20)};
}

TEST_F(KdctlOnGpu, BenchPrintsTheTableAndWritesAPngChart) {
  const auto shapes = tmp_.path() / "shapes.txt";
  write_text(shapes, kGood + "\n" + kUntuned + "\n");
  const auto chart = tmp_.path() / "chart.png";
  const KdctlRun r = kdctl({"bench", shapes.string(), "--chart", chart.string()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::printf("%s", r.out.c_str());
  EXPECT_NE(r.out.find("cuBLAS_us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tuned_us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  user"), std::string::npos) << "the tuned row names its proposer:\n" << r.out;
  EXPECT_NE(r.out.find("no tuned kernel (not_found)"), std::string::npos) << r.out;
  // The untuned shape still gets cuBLAS's time and floor fraction (speedup 1.00x: cuBLAS is kept).
  EXPECT_NE(r.out.find("1.00x"), std::string::npos) << "the untuned row has no cuBLAS time:\n" << r.out;
  EXPECT_NE(r.out.find("chart: " + chart.string()), std::string::npos) << r.out;

  const auto [width, height] = png_size(read_text(chart));
  EXPECT_GT(width, 0u);
  EXPECT_GT(height, 0u);
  EXPECT_LT(std::uint64_t{width} * height, 100'000'000u) << width << "x" << height;
}

TEST_F(KdctlOnGpu, BenchRejectsABadShapeListByLine) {
  const auto shapes = tmp_.path() / "bad.txt";
  write_text(shapes, kGood + "\ngemm a=f32 m=banana\n");
  const KdctlRun r = kdctl({"bench", shapes.string()});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(shapes.string() + ":2: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kd::test
