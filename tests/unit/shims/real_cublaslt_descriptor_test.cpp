// translate_cublaslt against descriptors built by the real cuBLASLt 13 (host-only calls: no GPU
// needed), as PyTorch builds them for nn.Linear with bias. Proves the attribute widths and
// defaults the shim assumes are the real library's.
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <variant>

#include "cublaslt_translate.hpp"

namespace kd::shim {
namespace {

class RealLtDescriptors : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    const std::int32_t t = CUBLAS_OP_T;
    ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), CUBLAS_STATUS_SUCCESS);
    const std::uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), CUBLAS_STATUS_SUCCESS);
    const void* bias = reinterpret_cast<void*>(0xbb00);
    ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, 4096, 11008, 4096), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, 4096, 16, 4096), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, 11008, 16, 11008), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(desc_);
  }
  Translation translate() {
    return translate_cublaslt(LtMatmulArgs{
        .desc = desc_, .alpha = &alpha_, .a = reinterpret_cast<void*>(0xa000), .a_layout = a_,
        .b = reinterpret_cast<void*>(0xb000), .b_layout = b_, .beta = &beta_,
        .c = reinterpret_cast<void*>(0xc000), .c_layout = c_, .d = reinterpret_cast<void*>(0xc000),
        .d_layout = c_, .stream = reinterpret_cast<cudaStream_t>(0x5000)});
  }

  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  float alpha_ = 1.0f, beta_ = 0.0f;
};

TEST_F(RealLtDescriptors, LinearWithBiasIsKeyed) {
  const Translation t = translate();
  ASSERT_TRUE(std::holds_alternative<GemmCall>(t))
      << "unsupported: " << to_string(std::get<Unsupported>(t));
  const GemmCall& call = std::get<GemmCall>(t);
  char line[KD_KEY_LINE_BYTES];
  ASSERT_EQ(kd_gemm_desc_key_line(&call.desc, line, sizeof line), KD_SUCCESS);
  EXPECT_STREQ(line,
               "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=11008 n=16 k=4096 lda=4096 "
               "ldb=4096 ldc=11008 batch=1 epilogue=bias beta0=1");
  EXPECT_EQ(call.bias, reinterpret_cast<void*>(0xbb00));
}

TEST_F(RealLtDescriptors, Fp8ScalePointerIsForwarded) {
  const void* scale = reinterpret_cast<void*>(0x1234);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale), CUBLAS_STATUS_SUCCESS);
  const Translation t = translate();
  ASSERT_TRUE(std::holds_alternative<Unsupported>(t));
  EXPECT_EQ(std::get<Unsupported>(t), Unsupported::lt_attribute);
}

TEST_F(RealLtDescriptors, GeluBiasEpilogueIsForwarded) {
  const std::uint32_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), CUBLAS_STATUS_SUCCESS);
  const Translation t = translate();
  ASSERT_TRUE(std::holds_alternative<Unsupported>(t));
  EXPECT_EQ(std::get<Unsupported>(t), Unsupported::epilogue);
}

}  // namespace
}  // namespace kd::shim
