// Enum spellings, precision classes, hashing and the roofline numbers of a key.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <variant>

#include "common/error.hpp"
#include "key/gemm_key.hpp"
#include "support/parsed_key.hpp"

namespace kd {
namespace {

using test::parsed_key;

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};

TEST(KeyNames, EveryEnumValueHasItsSpelling) {
  EXPECT_EQ(to_string(DType::f16), "f16");
  EXPECT_EQ(to_string(DType::bf16), "bf16");
  EXPECT_EQ(to_string(DType::f32), "f32");
  EXPECT_EQ(to_string(ComputeType::f16), "f16");
  EXPECT_EQ(to_string(ComputeType::f32), "f32");
  EXPECT_EQ(to_string(Transpose::N), "N");
  EXPECT_EQ(to_string(Transpose::T), "T");
  EXPECT_EQ(to_string(Epilogue::none), "none");
  EXPECT_EQ(to_string(Epilogue::bias), "bias");
  EXPECT_EQ(to_string(PrecisionClass::f32), "f32");
  EXPECT_EQ(to_string(PrecisionClass::tf32), "tf32");
  EXPECT_EQ(to_string(PrecisionClass::f16), "f16");
  EXPECT_EQ(dtype_bytes(DType::f16), 2u);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2u);
  EXPECT_EQ(dtype_bytes(DType::f32), 4u);
}

TEST(KeyPrecision, ClassFollowsComputeTypeMathModeAndInputType) {
  EXPECT_EQ(precision_class_for(ComputeType::f32, MathMode::default_math, DType::f32), PrecisionClass::f32);
  EXPECT_EQ(precision_class_for(ComputeType::f32, MathMode::tf32_allowed, DType::f32), PrecisionClass::tf32);
  // f16 and bf16 values are exact in TF32: 16-bit inputs keep the strict class.
  EXPECT_EQ(precision_class_for(ComputeType::f32, MathMode::tf32_allowed, DType::bf16), PrecisionClass::f32);
  EXPECT_EQ(precision_class_for(ComputeType::f32, MathMode::tf32_allowed, DType::f16), PrecisionClass::f32);
  EXPECT_EQ(precision_class_for(ComputeType::f16, MathMode::default_math, DType::f16), PrecisionClass::f16);
  EXPECT_EQ(precision_class_for(ComputeType::f16, MathMode::tf32_allowed, DType::f16), PrecisionClass::f16);
  EXPECT_EQ(default_precision(ComputeType::f32), PrecisionClass::f32);
  EXPECT_EQ(default_precision(ComputeType::f16), PrecisionClass::f16);
}

TEST(KeyHash, IsXxh3OfTheLineAndStableAcrossBuilds) {
  const GemmKey k = parsed_key(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
      "ldc=4096 batch=1 epilogue=none beta0=1");
  // Pinned: a change here orphans every cache on disk that is indexed by hash.
  EXPECT_EQ(k.hash(), 0x2d2a00ef5880edd3ull) << std::hex << k.hash();
  EXPECT_EQ(k.hash(), parsed_key(k.shape_line()).hash());
  EXPECT_NE(k.with_device(kH100).hash(), k.hash());
}

TEST(KeyHash, DiffersForKeysThatDifferInOneField) {
  const GemmKey base = parsed_key(
      "gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=2 "
      "stride_a=1024 stride_b=512 stride_c=2048 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 "
      "80GB HBM3\" sms=132");
  std::vector<GemmKey> variants(18, base);
  variants[1].c = DType::f32;
  variants[2].compute = ComputeType::f32;
  variants[3].ta = Transpose::T;
  variants[4].tb = Transpose::T;
  variants[5].m = 65;
  variants[6].n = 33;
  variants[7].k = 17;
  variants[8].lda = 65;
  variants[9].ldb = 17;
  variants[10].ldc = 65;
  variants[11].batch = 3;
  variants[12].stride_a = 1025;
  variants[13].epilogue = Epilogue::bias;
  variants[14].beta_zero = false;
  variants[15].device->sms = 114;
  variants[16].device->gpu = "NVIDIA H100 PCIe";
  variants[17].device.reset();
  std::set<std::uint64_t> hashes;
  for (const GemmKey& v : variants) hashes.insert(v.hash());
  EXPECT_EQ(hashes.size(), variants.size());
}

TEST(KeyDevice, WithDeviceAddsThePartAndKeepsTheShape) {
  const GemmKey shape = parsed_key("linear dtype=bf16 tokens=16 in=4096 out=4096");
  const GemmKey full = shape.with_device(kH100);
  ASSERT_TRUE(full.device.has_value());
  EXPECT_EQ(*full.device, kH100);
  EXPECT_EQ(full.shape_line(), shape.shape_line());
  EXPECT_EQ(full.full_line(), shape.shape_line() +
                                  " arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132");
  EXPECT_FALSE(shape.device.has_value());
}

TEST(KeyDevice, LinesThatWouldNotParseBackAreNotPrinted) {
  const GemmKey shape = parsed_key("linear dtype=bf16 tokens=16 in=4096 out=4096");
  EXPECT_THROW((void)shape.full_line(), Error);  // no device part
  EXPECT_THROW((void)shape.with_device({"sm_90", "bad \"name\"", 132}).full_line(), Error);
  EXPECT_THROW((void)shape.with_device({"sm_90", "two\nlines", 132}).hash(), Error);
  EXPECT_THROW((void)shape.with_device({"sm 90", "H100", 132}).full_line(), Error);
}

TEST(KeyRoofline, MinBytesAndFlopsOfAKnownShape) {
  // bf16 4096x16x4096, beta0=1: A 4096*4096*2 + B 4096*16*2 + C written 4096*16*2.
  const GemmKey decode = parsed_key("linear dtype=bf16 tokens=16 in=4096 out=4096");
  EXPECT_EQ(min_bytes(decode), 33554432 + 131072 + 131072);
  EXPECT_DOUBLE_EQ(flops(decode), 2.0 * 4096 * 16 * 4096);

  // f32 with beta != 0 reads C too; a bias adds m elements of C's type; all of it per batch.
  const GemmKey batched = parsed_key(
      "gemm a=f16 b=f16 c=f32 compute=f32 ta=N tb=T m=100 n=30 k=20 lda=128 ldb=64 ldc=100 "
      "batch=3 stride_a=2560 stride_b=1920 stride_c=3000 epilogue=bias beta0=0");
  const std::int64_t per_batch = 100 * 20 * 2 + 20 * 30 * 2 + 100 * 30 * 4 * 2 + 100 * 4;
  EXPECT_EQ(min_bytes(batched), 3 * per_batch);
  EXPECT_DOUBLE_EQ(flops(batched), 2.0 * 100 * 30 * 20 * 3);
  EXPECT_EQ(min_lda(batched), 100);  // ta=N: rows of A are m
  EXPECT_EQ(min_ldb(batched), 30);   // tb=T: rows of stored B are n
}

TEST(KeyRoofline, MinBytesSaturatesInsteadOfOverflowing) {
  const std::string max = std::to_string(std::numeric_limits<std::int64_t>::max());
  const GemmKey k = parsed_key("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=" + max +
                             " n=2 k=2 lda=" + max + " ldb=2 ldc=" + max +
                             " batch=1 epilogue=none beta0=1");
  EXPECT_EQ(min_bytes(k), std::numeric_limits<std::int64_t>::max());
}

}  // namespace
}  // namespace kd
