// Unit tests of the shim's tables: enum translation into the C API's values, the TF32 rule, half
// conversion, unsupported reasons from kd_gemm_desc_check, and the stats report. (Which calls are
// keyed is libkdispatch's rule: tests/unit/libdispatch/key/gemm_rules_test.cpp.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <variant>

#include "cuda_enums.hpp"
#include "shim_stats.hpp"
#include "support/gemm_desc.hpp"
#include "translation.hpp"

namespace kd::shim {
namespace {

TEST(CudaEnums, DataTypesAndTransposes) {
  EXPECT_EQ(dtype_of(CUDA_R_16F), KD_DTYPE_F16);
  EXPECT_EQ(dtype_of(CUDA_R_16BF), KD_DTYPE_BF16);
  EXPECT_EQ(dtype_of(CUDA_R_32F), KD_DTYPE_F32);
  EXPECT_FALSE(dtype_of(CUDA_R_64F));
  EXPECT_FALSE(dtype_of(CUDA_R_8F_E4M3));
  EXPECT_EQ(op_of(CUBLAS_OP_N), KD_OP_N);
  EXPECT_EQ(op_of(CUBLAS_OP_T), KD_OP_T);
  EXPECT_FALSE(op_of(CUBLAS_OP_C));
}

TEST(CudaEnums, Tf32FromComputeTypeAndMathMode) {
  const auto c32 = *compute_of(CUBLAS_COMPUTE_32F);
  const auto pedantic = *compute_of(CUBLAS_COMPUTE_32F_PEDANTIC);
  const auto fast_tf32 = *compute_of(CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(math_of(c32, HandleMath::default_math), KD_MATH_DEFAULT);
  EXPECT_EQ(math_of(c32, HandleMath::tf32), KD_MATH_TF32_ALLOWED);
  EXPECT_EQ(math_of(pedantic, HandleMath::tf32), KD_MATH_DEFAULT);
  EXPECT_EQ(math_of(fast_tf32, HandleMath::default_math), KD_MATH_TF32_ALLOWED);
  EXPECT_EQ(math_of(fast_tf32, HandleMath::pedantic), KD_MATH_DEFAULT);
  EXPECT_EQ(compute_of(CUBLAS_COMPUTE_16F)->compute, KD_COMPUTE_F16);
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

kd_gemm_desc valid_desc() {
  kd_gemm_desc d = test::gemm_desc(KD_OP_T, KD_OP_N, 4096, 16, 4096, KD_DTYPE_BF16);
  d.beta_zero = 1;
  return d;
}

// Each kind of problem kd_gemm_desc_check names is counted under its own reason.
TEST(Translation, UnsupportedReasonsComeFromTheCApiCheck) {
  const auto with = [](auto change) {
    kd_gemm_desc d = valid_desc();
    change(d);
    return unsupported_desc(d);
  };
  EXPECT_EQ(with([](kd_gemm_desc&) {}), std::nullopt);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.b_type = KD_DTYPE_F16; }), Unsupported::data_type);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.compute = KD_COMPUTE_F16; }), Unsupported::compute_type);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.lda = 100; }), Unsupported::shape);  // ta=T needs lda >= k
  EXPECT_EQ(with([](kd_gemm_desc& d) {
              d.batch = 2;
              d.stride_c = 4096 * 15;  // the two outputs overlap
            }),
            Unsupported::batch_layout);
  char line[KD_KEY_LINE_BYTES];
  const kd_gemm_desc d = valid_desc();
  ASSERT_EQ(kd_gemm_desc_key_line(&d, line, sizeof line), KD_SUCCESS);
  EXPECT_STREQ(line, "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 "
                     "ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
}

TEST(ShimStats, ReportListsNonZeroReasonsByName) {
  StatsSnapshot s;
  s.hits = 3;
  s.misses = 2;
  s.fallbacks = 1;
  s.calls[static_cast<std::size_t>(EntryPoint::gemm_ex)] = 6;
  s.by_reason[KD_FALLBACK_NO_ENTRY] = 2;
  s.by_unsupported[static_cast<std::size_t>(Unsupported::device_scalars)] = 1;
  const std::string text = format_stats(s);
  EXPECT_NE(text.find("kdispatch_cublas: hits=3 misses=2 fallbacks=1 nested=0"), std::string::npos) << text;
  EXPECT_NE(text.find("calls cublasGemmEx=6\n"), std::string::npos) << text;
  EXPECT_NE(text.find("reasons no_entry=2 unsupported.device_scalars=1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace kd::shim
