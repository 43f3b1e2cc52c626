// Stand-in for libcublas.so.13 (same SONAME and version node): handles that hold a stream, math
// mode and pointer mode, and GEMM entry points that only log their arguments. Like the real
// library, cublasGemmEx calls cublasLtMatmul itself through its dynamic symbol (so a preloaded
// shim receives that nested call too: the reentrancy guard's test).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <string>

#include "fake_log.hpp"

namespace {

struct FakeHandle {
  int id;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};
int g_next_handle = 1;

FakeHandle* fake(cublasHandle_t h) { return reinterpret_cast<FakeHandle*>(h); }

// Device-mode scalars are device pointers: logged, never read.
std::string scalar(const void* p, bool half, cublasPointerMode_t mode) {
  if (p == nullptr) return "null";
  if (mode == CUBLAS_POINTER_MODE_DEVICE) return fake_cublas::format("dev:%p", p);
  return fake_cublas::host_scalar(p, half);
}

// Every GEMM entry point logs through this, widened to 64 bits.
void log_gemm(const char* name, cublasHandle_t h, int ta, int tb, long long m, long long n,
              long long k, const void* alpha, const void* A, int at, long long lda, long long sa,
              const void* B, int bt, long long ldb, long long sb, const void* beta, const void* C,
              int ct, long long ldc, long long sc, long long batch, int compute, int algo) {
  const bool half = compute == CUBLAS_COMPUTE_16F;
  const std::string line = fake_cublas::format(
      "%s handle#%d stream=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%s A=%p at=%d lda=%lld "
      "sa=%lld B=%p bt=%d ldb=%lld sb=%lld beta=%s C=%p ct=%d ldc=%lld sc=%lld batch=%lld "
      "compute=%d algo=%d",
      name, fake(h)->id, static_cast<void*>(fake(h)->stream), ta, tb, m, n, k,
      scalar(alpha, half, fake(h)->pointer_mode).c_str(), A, at, lda, sa, B, bt, ldb, sb, scalar(beta, half, fake(h)->pointer_mode).c_str(), C,
      ct, ldc, sc, batch, compute, algo);
  fake_cublas_log_append(line.c_str());
}

// What libcublas does for some GEMMs: run them through cuBLASLt.
void nested_lt_matmul(cublasHandle_t h, int ta, int tb, long long m, long long n, long long k,
                      const void* alpha, const void* A, cudaDataType at, long long lda,
                      const void* B, cudaDataType bt, long long ldb, const void* beta, void* C,
                      cudaDataType ct, long long ldc, cublasComputeType_t compute) {
  cublasLtHandle_t lt = nullptr;
  cublasLtCreate(&lt);
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatmulDescCreate(&desc, compute, compute == CUBLAS_COMPUTE_16F ? CUDA_R_16F : CUDA_R_32F);
  const std::int32_t op_a = ta, op_b = tb;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  const auto u = [](long long v) { return static_cast<std::uint64_t>(v); };
  cublasLtMatrixLayoutCreate(&la, at, ta == CUBLAS_OP_N ? u(m) : u(k), ta == CUBLAS_OP_N ? u(k) : u(m), lda);
  cublasLtMatrixLayoutCreate(&lb, bt, tb == CUBLAS_OP_N ? u(k) : u(n), tb == CUBLAS_OP_N ? u(n) : u(k), ldb);
  cublasLtMatrixLayoutCreate(&lc, ct, u(m), u(n), ldc);
  cublasLtMatmul(lt, desc, alpha, A, la, B, lb, beta, C, lc, C, lc, nullptr, nullptr, 0,
                 fake(h)->stream);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new FakeHandle{g_next_handle++});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete fake(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  fake(h)->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* workspace, size_t bytes) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  fake_cublas_log_append(fake_cublas::format("cublasSetWorkspace_v2 handle#%d ws=%p bytes=%zu", fake(h)->id,
                                             workspace, bytes).c_str());
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *s = fake(h)->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  fake(h)->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* mode) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = fake(h)->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode) {
  fake(h)->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t* mode) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = fake(h)->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float* alpha, const float* A, int lda,
                              const float* B, int ldb, const float* beta, float* C, int ldc) {
  log_gemm("cublasSgemm_v2", h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb,
           0, beta, C, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, -1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemm_v2_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                 int64_t m, int64_t n, int64_t k, const float* alpha,
                                 const float* A, int64_t lda, const float* B, int64_t ldb,
                                 const float* beta, float* C, int64_t ldc) {
  log_gemm("cublasSgemm_v2_64", h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F,
           ldb, 0, beta, C, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, -1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void* alpha, const void* A, cudaDataType at,
                            int lda, const void* B, cudaDataType bt, int ldb, const void* beta,
                            void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  log_gemm("cublasGemmEx", h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct,
           ldc, 0, 1, compute, algo);
  nested_lt_matmul(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmEx_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                               int64_t m, int64_t n, int64_t k, const void* alpha, const void* A,
                               cudaDataType at, int64_t lda, const void* B, cudaDataType bt,
                               int64_t ldb, const void* beta, void* C, cudaDataType ct,
                               int64_t ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  log_gemm("cublasGemmEx_64", h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct,
           ldc, 0, 1, compute, algo);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long sa, const float* B, int ldb, long long sb,
                                         const float* beta, float* C, int ldc, long long sc,
                                         int batch) {
  log_gemm("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, sa, B,
           CUDA_R_32F, ldb, sb, beta, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F, -1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t ta,
                                            cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                                            const float* alpha, const float* A, int64_t lda,
                                            long long sa, const float* B, int64_t ldb,
                                            long long sb, const float* beta, float* C,
                                            int64_t ldc, long long sc, int64_t batch) {
  log_gemm("cublasSgemmStridedBatched_64", h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, sa, B,
           CUDA_R_32F, ldb, sb, beta, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F, -1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType at,
                                          int lda, long long sa, const void* B, cudaDataType bt,
                                          int ldb, long long sb, const void* beta, void* C,
                                          cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  log_gemm("cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb,
           beta, C, ct, ldc, sc, batch, compute, algo);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t h, cublasOperation_t ta,
                                             cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                                             const void* alpha, const void* A, cudaDataType at,
                                             int64_t lda, long long sa, const void* B,
                                             cudaDataType bt, int64_t ldb, long long sb,
                                             const void* beta, void* C, cudaDataType ct,
                                             int64_t ldc, long long sc, int64_t batch,
                                             cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  log_gemm("cublasGemmStridedBatchedEx_64", h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb,
           sb, beta, C, ct, ldc, sc, batch, compute, algo);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
