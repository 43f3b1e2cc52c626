// cuBLAS GEMM entry points -> GemmCall. The eight entry points differ only in which arguments they
// have and their widths; each fills CublasGemmArgs and calls translate_cublas.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "translation.hpp"

namespace kd::shim {

// The arguments of any cuBLAS GEMM entry point, widened to 64 bits. Non-batched calls have
// batch = 1 and zero strides; the Sgemm entries have CUDA_R_32F types and CUBLAS_COMPUTE_32F.
struct CublasGemmArgs {
  cublasHandle_t handle = nullptr;
  int transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  std::int64_t m = 0, n = 0, k = 0;
  const void* alpha = nullptr;
  const void* a = nullptr;
  cudaDataType a_type = CUDA_R_32F;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  cudaDataType b_type = CUDA_R_32F;
  std::int64_t ldb = 0, stride_b = 0;
  const void* beta = nullptr;
  void* c = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  std::int64_t ldc = 0, stride_c = 0;
  std::int64_t batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

// Reads the handle's stream, math mode and pointer mode through the real library (every call:
// they may change between calls) and builds the keyed call, or says why it is not keyed.
// Never throws.
Translation translate_cublas(const CublasGemmArgs& args) noexcept;

}  // namespace kd::shim
