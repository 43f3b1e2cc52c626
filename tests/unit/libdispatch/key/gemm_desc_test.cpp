// The C API's kd_gemm_desc read as a GemmShape (key/gemm_desc.hpp): fields carried over, the
// precision class applied, and every kind of problem reported by its kdispatch.h number.
#include <gtest/gtest.h>

#include "key/gemm_desc.hpp"
#include "key/gemm_key.hpp"
#include "support/gemm_desc.hpp"

namespace kd {
namespace {

// nn.Linear's call with a bias, bf16, 4096 x 16 x 4096.
kd_gemm_desc linear_bf16() {
  kd_gemm_desc d = test::gemm_desc(KD_OP_T, KD_OP_N, 4096, 16, 4096, KD_DTYPE_BF16);
  d.epilogue = KD_EPILOGUE_BIAS;
  d.beta_zero = 1;
  return d;
}

std::string line_of(const kd_gemm_desc& d) {
  GemmShape s;
  EXPECT_EQ(read_gemm_desc(d, s), KD_DESC_KEYABLE);
  return shape_line(s);
}

TEST(GemmDesc, ReadsEveryFieldIntoTheShape) {
  EXPECT_EQ(line_of(linear_bf16()),
            "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
            "ldc=4096 batch=1 epilogue=bias beta0=1");
  kd_gemm_desc batched = test::gemm_desc(KD_OP_N, KD_OP_T, 16, 8, 32, KD_DTYPE_F16);
  batched.batch = 3;
  batched.stride_a = 512;
  batched.stride_b = 0;
  batched.stride_c = 128;
  batched.c_type = KD_DTYPE_F32;
  EXPECT_EQ(line_of(batched),
            "gemm a=f16 b=f16 c=f32 compute=f32 ta=N tb=T m=16 n=8 k=32 lda=16 ldb=8 ldc=16 batch=3 "
            "stride_a=512 stride_b=0 stride_c=128 epilogue=none beta0=0");
}

TEST(GemmDesc, Tf32MathMakesTheTf32ClassOnlyForF32Inputs) {
  kd_gemm_desc d = linear_bf16();
  d.math = KD_MATH_TF32_ALLOWED;
  EXPECT_EQ(line_of(d).find("precision="), std::string::npos) << line_of(d);
  d.a_type = d.b_type = d.c_type = KD_DTYPE_F32;
  EXPECT_TRUE(line_of(d).ends_with(" beta0=1 precision=tf32")) << line_of(d);
  d.math = KD_MATH_DEFAULT;
  EXPECT_TRUE(line_of(d).ends_with(" beta0=1")) << line_of(d);
}

TEST(GemmDesc, ReportsEachProblemByItsNumber) {
  GemmShape s;
  const auto with = [&s](auto change) {
    kd_gemm_desc d = linear_bf16();
    change(d);
    return read_gemm_desc(d, s);
  };
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.a_type = static_cast<kd_dtype>(3); }), KD_DESC_INVALID);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.math = static_cast<kd_math>(-1); }), KD_DESC_INVALID);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.stride_c = 4096; }), KD_DESC_INVALID);  // batch == 1
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.b_type = KD_DTYPE_F16; }), KD_DESC_DATA_TYPE);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.compute = KD_COMPUTE_F16; }), KD_DESC_COMPUTE_TYPE);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.n = 0; }), KD_DESC_SHAPE);
  EXPECT_EQ(with([](kd_gemm_desc& d) { d.ldb = 4095; }), KD_DESC_SHAPE);
  EXPECT_EQ(with([](kd_gemm_desc& d) {
              d.batch = 2;
              d.stride_c = 4096 * 16;  // with the bias epilogue
            }),
            KD_DESC_BATCH_LAYOUT);
}

}  // namespace
}  // namespace kd
