// The interposed cublasLtMatmul (version node libcublasLt.so.13, see shims/exports.map).
#include "cublaslt_translate.hpp"
#include "intercept.hpp"
#include "real_cublas.hpp"

using kd::shim::EntryPoint;
using kd::shim::intercept;
using kd::shim::LtMatmulArgs;
using kd::shim::real_cublas;
using kd::shim::translate_cublaslt;

KD_SHIM_EXPORT cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
    const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
    const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
    size_t workspaceSizeInBytes, cudaStream_t stream) {
  return intercept(
      EntryPoint::lt_matmul, real_cublas().lt_matmul,
      [&] {
        return translate_cublaslt(LtMatmulArgs{
            .desc = computeDesc, .alpha = alpha, .a = A, .a_layout = Adesc, .b = B,
            .b_layout = Bdesc, .beta = beta, .c = C, .c_layout = Cdesc, .d = D,
            .d_layout = Ddesc, .workspace = workspace, .workspace_bytes = workspaceSizeInBytes,
            .stream = stream});
      },
      lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
      workspace, workspaceSizeInBytes, stream);
}
