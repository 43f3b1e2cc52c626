// Unit tests of the shim's tables and checks: enum translation, the precision rule, half
// conversion, key checks agreeing with the key parser, and the stats report.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <variant>

#include "cuda_enums.hpp"
#include "key/gemm_key.hpp"
#include "key_checks.hpp"
#include "shim_stats.hpp"

namespace kd::shim {
namespace {

TEST(CudaEnums, DataTypesAndTransposes) {
  EXPECT_EQ(dtype_of(CUDA_R_16F), DType::f16);
  EXPECT_EQ(dtype_of(CUDA_R_16BF), DType::bf16);
  EXPECT_EQ(dtype_of(CUDA_R_32F), DType::f32);
  EXPECT_FALSE(dtype_of(CUDA_R_64F));
  EXPECT_FALSE(dtype_of(CUDA_R_8F_E4M3));
  EXPECT_EQ(transpose_of(CUBLAS_OP_N), Transpose::N);
  EXPECT_EQ(transpose_of(CUBLAS_OP_T), Transpose::T);
  EXPECT_FALSE(transpose_of(CUBLAS_OP_C));
}

TEST(CudaEnums, Tf32FromComputeTypeAndMathMode) {
  const auto c32 = *compute_of(CUBLAS_COMPUTE_32F);
  const auto pedantic = *compute_of(CUBLAS_COMPUTE_32F_PEDANTIC);
  const auto fast_tf32 = *compute_of(CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(math_mode_of(c32, HandleMath::default_math), MathMode::default_math);
  EXPECT_EQ(math_mode_of(c32, HandleMath::tf32), MathMode::tf32_allowed);
  EXPECT_EQ(math_mode_of(pedantic, HandleMath::tf32), MathMode::default_math);
  EXPECT_EQ(math_mode_of(fast_tf32, HandleMath::default_math), MathMode::tf32_allowed);
  EXPECT_EQ(math_mode_of(fast_tf32, HandleMath::pedantic), MathMode::default_math);
  EXPECT_FALSE(compute_of(CUBLAS_COMPUTE_32F_FAST_16F));
  EXPECT_FALSE(compute_of(CUBLAS_COMPUTE_64F));
}

TEST(CudaEnums, MathModeIgnoresTheReductionBitAndRejectsTensorOpMath) {
  const auto with_bit = [](int m) {
    return static_cast<cublasMath_t>(m | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  };
  EXPECT_EQ(handle_math_of(CUBLAS_DEFAULT_MATH), HandleMath::default_math);
  EXPECT_EQ(handle_math_of(with_bit(CUBLAS_TF32_TENSOR_OP_MATH)), HandleMath::tf32);
  EXPECT_EQ(handle_math_of(with_bit(CUBLAS_PEDANTIC_MATH)), HandleMath::pedantic);
  EXPECT_FALSE(handle_math_of(CUBLAS_TENSOR_OP_MATH));
}

TEST(CudaEnums, HalfBitsConvertExactly) {
  EXPECT_EQ(half_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_bits_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(half_bits_to_float(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7e00)));
}

GemmKey valid_key() {
  GemmKey k;
  k.a = k.b = k.c = DType::bf16;
  k.ta = Transpose::T;
  k.m = 4096;
  k.n = 16;
  k.k = 4096;
  k.lda = k.ldb = k.ldc = 4096;
  k.beta_zero = true;
  return k;
}

// A key the shim accepts must parse back to itself: it is looked up and recorded as a line.
TEST(KeyChecks, AcceptedKeysRoundTripThroughTheParser) {
  std::vector<GemmKey> keys;
  keys.push_back(valid_key());
  GemmKey batched = valid_key();
  batched.batch = 4;
  batched.stride_a = 0;  // broadcast A: allowed
  batched.stride_b = 4096 * 16;
  batched.stride_c = 4096 * 16;
  keys.push_back(batched);
  GemmKey half = valid_key();
  half.a = half.b = half.c = DType::f16;
  half.compute = ComputeType::f16;
  half.precision = PrecisionClass::f16;
  keys.push_back(half);
  GemmKey tf32 = valid_key();
  tf32.a = tf32.b = tf32.c = DType::f32;
  tf32.precision = PrecisionClass::tf32;
  tf32.epilogue = Epilogue::bias;
  keys.push_back(tf32);
  for (const GemmKey& k : keys) {
    ASSERT_FALSE(check_key(k)) << k.shape_line();
    const auto parsed = parse_key(k.shape_line());
    ASSERT_TRUE(std::holds_alternative<GemmKey>(parsed)) << k.shape_line();
    EXPECT_EQ(std::get<GemmKey>(parsed), k);
  }
}

TEST(KeyChecks, RejectsWhatTheKeyCannotHold) {
  const auto with = [](auto change) {
    GemmKey k = valid_key();
    change(k);
    return check_key(k);
  };
  EXPECT_EQ(with([](GemmKey& k) { k.b = DType::f16; }), Unsupported::data_type);
  EXPECT_EQ(with([](GemmKey& k) { k.c = DType::f16; }), Unsupported::data_type);
  EXPECT_EQ(with([](GemmKey& k) { k.compute = ComputeType::f16; }), Unsupported::compute_type);
  EXPECT_EQ(with([](GemmKey& k) { k.k = 0; }), Unsupported::shape);
  EXPECT_EQ(with([](GemmKey& k) { k.lda = 100; }), Unsupported::shape);  // ta=T needs lda >= k
  EXPECT_EQ(with([](GemmKey& k) { k.ldc = 4095; }), Unsupported::shape);
  EXPECT_EQ(with([](GemmKey& k) {
              k.batch = 2;
              k.stride_c = 4096 * 15;  // the two outputs overlap
            }),
            Unsupported::batch_layout);
  EXPECT_EQ(with([](GemmKey& k) {
              k.batch = 2;
              k.stride_c = 4096 * 16;
              k.epilogue = Epilogue::bias;
            }),
            Unsupported::batch_layout);
}

TEST(ShimStats, ReportListsNonZeroReasonsByName) {
  StatsSnapshot s;
  s.hits = 3;
  s.misses = 2;
  s.fallbacks = 1;
  s.calls[static_cast<std::size_t>(EntryPoint::gemm_ex)] = 6;
  s.by_reason[static_cast<std::size_t>(FallbackReason::no_entry)] = 2;
  s.by_unsupported[static_cast<std::size_t>(Unsupported::device_scalars)] = 1;
  const std::string text = format_stats(s);
  EXPECT_NE(text.find("kdispatch_cublas: hits=3 misses=2 fallbacks=1 nested=0"), std::string::npos) << text;
  EXPECT_NE(text.find("calls cublasGemmEx=6\n"), std::string::npos) << text;
  EXPECT_NE(text.find("reasons no_entry=2 unsupported.device_scalars=1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace kd::shim
