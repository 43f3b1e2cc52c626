// The interposed cuBLAS GEMM symbols (version node libcublas.so.13, see shims/exports.map). Each
// widens its arguments into CublasGemmArgs for the key and forwards the originals untouched.
#include "cublas_translate.hpp"
#include "intercept.hpp"
#include "real_cublas.hpp"

using kd::shim::CublasGemmArgs;
using kd::shim::EntryPoint;
using kd::shim::intercept;
using kd::shim::real_cublas;
using kd::shim::translate_cublas;

KD_SHIM_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const float* alpha, const float* A, int lda,
                                             const float* B, int ldb, const float* beta, float* C,
                                             int ldc) {
  return intercept(
      EntryPoint::sgemm, real_cublas().sgemm,
      [&] {
        return translate_cublas(CublasGemmArgs{.handle = handle, .transa = transa, .transb = transb,
                                               .m = m, .n = n, .k = k, .alpha = alpha, .a = A,
                                               .lda = lda, .b = B, .ldb = ldb, .beta = beta,
                                               .c = C, .ldc = ldc});
      },
      handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

KD_SHIM_EXPORT cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int64_t m, int64_t n,
                                                int64_t k, const float* alpha, const float* A,
                                                int64_t lda, const float* B, int64_t ldb,
                                                const float* beta, float* C, int64_t ldc) {
  return intercept(
      EntryPoint::sgemm_64, real_cublas().sgemm_64,
      [&] {
        return translate_cublas(CublasGemmArgs{.handle = handle, .transa = transa, .transb = transb,
                                               .m = m, .n = n, .k = k, .alpha = alpha, .a = A,
                                               .lda = lda, .b = B, .ldb = ldb, .beta = beta,
                                               .c = C, .ldc = ldc});
      },
      handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

KD_SHIM_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const void* alpha, const void* A, cudaDataType Atype,
                                           int lda, const void* B, cudaDataType Btype, int ldb,
                                           const void* beta, void* C, cudaDataType Ctype, int ldc,
                                           cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return intercept(
      EntryPoint::gemm_ex, real_cublas().gemm_ex,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .a_type = Atype, .lda = lda, .b = B, .b_type = Btype,
            .ldb = ldb, .beta = beta, .c = C, .c_type = Ctype, .ldc = ldc,
            .compute = computeType});
      },
      handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
      computeType, algo);
}

KD_SHIM_EXPORT cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int64_t m, int64_t n,
                                              int64_t k, const void* alpha, const void* A,
                                              cudaDataType Atype, int64_t lda, const void* B,
                                              cudaDataType Btype, int64_t ldb, const void* beta,
                                              void* C, cudaDataType Ctype, int64_t ldc,
                                              cublasComputeType_t computeType,
                                              cublasGemmAlgo_t algo) {
  return intercept(
      EntryPoint::gemm_ex_64, real_cublas().gemm_ex_64,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .a_type = Atype, .lda = lda, .b = B, .b_type = Btype,
            .ldb = ldb, .beta = beta, .c = C, .c_type = Ctype, .ldc = ldc,
            .compute = computeType});
      },
      handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
      computeType, algo);
}

KD_SHIM_EXPORT cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
    long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return intercept(
      EntryPoint::sgemm_strided, real_cublas().sgemm_strided,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .lda = lda, .stride_a = strideA, .b = B, .ldb = ldb,
            .stride_b = strideB, .beta = beta, .c = C, .ldc = ldc, .stride_c = strideC,
            .batch = batchCount});
      },
      handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
      strideC, batchCount);
}

KD_SHIM_EXPORT cublasStatus_t cublasSgemmStridedBatched_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const float* alpha, const float* A, int64_t lda, long long int strideA,
    const float* B, int64_t ldb, long long int strideB, const float* beta, float* C, int64_t ldc,
    long long int strideC, int64_t batchCount) {
  return intercept(
      EntryPoint::sgemm_strided_64, real_cublas().sgemm_strided_64,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .lda = lda, .stride_a = strideA, .b = B, .ldb = ldb,
            .stride_b = strideB, .beta = beta, .c = C, .ldc = ldc, .stride_c = strideC,
            .batch = batchCount});
      },
      handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
      strideC, batchCount);
}

KD_SHIM_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return intercept(
      EntryPoint::gemm_strided_ex, real_cublas().gemm_strided_ex,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .a_type = Atype, .lda = lda, .stride_a = strideA, .b = B,
            .b_type = Btype, .ldb = ldb, .stride_b = strideB, .beta = beta, .c = C,
            .c_type = Ctype, .ldc = ldc, .stride_c = strideC, .batch = batchCount,
            .compute = computeType});
      },
      handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
      C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

KD_SHIM_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return intercept(
      EntryPoint::gemm_strided_ex_64, real_cublas().gemm_strided_ex_64,
      [&] {
        return translate_cublas(CublasGemmArgs{
            .handle = handle, .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
            .alpha = alpha, .a = A, .a_type = Atype, .lda = lda, .stride_a = strideA, .b = B,
            .b_type = Btype, .ldb = ldb, .stride_b = strideB, .beta = beta, .c = C,
            .c_type = Ctype, .ldc = ldc, .stride_c = strideC, .batch = batchCount,
            .compute = computeType});
      },
      handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
      C, Ctype, ldc, strideC, batchCount, computeType, algo);
}
