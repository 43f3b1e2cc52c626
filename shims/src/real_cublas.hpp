// Every real cuBLAS / cuBLASLt function the shim calls: the interposed GEMMs it forwards to and the
// getters it reads the handle and descriptors with (those are never interposed), and the handle
// setters it interposes to learn each handle's workspace.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include "real_library.hpp"

namespace kd::shim {

// cublas_api.h overloads cublasGemmEx and cublasGemmStridedBatchedEx in C++ (legacy cudaDataType
// compute type), so their types are spelled out; the rest come from decltype.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct RealCublas {
  RealFunction<decltype(&cublasSgemm_v2)> sgemm{RealLibrary::cublas, "cublasSgemm_v2"};
  RealFunction<decltype(&cublasSgemm_v2_64)> sgemm_64{RealLibrary::cublas, "cublasSgemm_v2_64"};
  RealFunction<GemmExFn> gemm_ex{RealLibrary::cublas, "cublasGemmEx"};
  RealFunction<decltype(&cublasGemmEx_64)> gemm_ex_64{RealLibrary::cublas, "cublasGemmEx_64"};
  RealFunction<decltype(&cublasSgemmStridedBatched)> sgemm_strided{RealLibrary::cublas,
                                                                   "cublasSgemmStridedBatched"};
  RealFunction<decltype(&cublasSgemmStridedBatched_64)> sgemm_strided_64{
      RealLibrary::cublas, "cublasSgemmStridedBatched_64"};
  RealFunction<GemmStridedBatchedExFn> gemm_strided_ex{RealLibrary::cublas,
                                                       "cublasGemmStridedBatchedEx"};
  RealFunction<decltype(&cublasGemmStridedBatchedEx_64)> gemm_strided_ex_64{
      RealLibrary::cublas, "cublasGemmStridedBatchedEx_64"};

  // Handle configuration, interposed to track the handle's workspace (handle_workspaces.hpp).
  RealFunction<decltype(&cublasCreate_v2)> create{RealLibrary::cublas, "cublasCreate_v2"};
  RealFunction<decltype(&cublasDestroy_v2)> destroy{RealLibrary::cublas, "cublasDestroy_v2"};
  RealFunction<decltype(&cublasSetStream_v2)> set_stream{RealLibrary::cublas, "cublasSetStream_v2"};
  RealFunction<decltype(&cublasSetWorkspace_v2)> set_workspace{RealLibrary::cublas, "cublasSetWorkspace_v2"};

  RealFunction<decltype(&cublasGetStream_v2)> get_stream{RealLibrary::cublas, "cublasGetStream_v2"};
  RealFunction<decltype(&cublasGetMathMode)> get_math_mode{RealLibrary::cublas, "cublasGetMathMode"};
  RealFunction<decltype(&cublasGetPointerMode_v2)> get_pointer_mode{RealLibrary::cublas,
                                                                    "cublasGetPointerMode_v2"};

  RealFunction<decltype(&cublasLtMatmul)> lt_matmul{RealLibrary::cublaslt, "cublasLtMatmul"};
  RealFunction<decltype(&cublasLtMatmulDescGetAttribute)> lt_desc_get{
      RealLibrary::cublaslt, "cublasLtMatmulDescGetAttribute"};
  RealFunction<decltype(&cublasLtMatrixLayoutGetAttribute)> lt_layout_get{
      RealLibrary::cublaslt, "cublasLtMatrixLayoutGetAttribute"};
};

// The process-wide table (constant-initialized).
RealCublas& real_cublas() noexcept;

}  // namespace kd::shim
