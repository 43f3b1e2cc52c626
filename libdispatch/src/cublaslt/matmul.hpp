// A key's GEMM described to cuBLASLt, once, for every user: the search worker (enumeration and
// the gate) and libkdispatch's loader build the same descriptors from the same key.
//
// Mapping (design.md's key, cuBLAS column-major conventions):
//   precision class f32 -> CUBLAS_COMPUTE_32F, tf32 -> CUBLAS_COMPUTE_32F_FAST_TF32 (scale f32);
//                   f16 -> CUBLAS_COMPUTE_16F (scale f16: alpha and beta are passed as half);
//   ta/tb           -> CUBLASLT_MATMUL_DESC_TRANSA/TRANSB;
//   a, b, c dtypes, m/n/k, lda/ldb/ldc -> column-major layouts (A is m x k when ta=N, else k x m);
//   batch > 1       -> CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT and STRIDED_BATCH_OFFSET (stride_a/b/c);
//   epilogue=bias   -> CUBLASLT_EPILOGUE_BIAS; the bias pointer (m elements of C's type) is a
//                      per-call attribute of the descriptor: set_bias();
//   beta0           -> nothing: it is the call's beta (0), passed per call; cuBLASLt reads no C then.
// C and D are one buffer with C's layout (in place, as cuBLAS's GEMM).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "cublaslt/library.hpp"
#include "key/gemm_key.hpp"

namespace kd {

// The key's enums as cuBLAS and cuBLASLt name them; also used by the gate's vendor baseline.
inline cudaDataType_t cuda_data_type(DType t) noexcept {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

inline cublasComputeType_t cublas_compute_type(PrecisionClass p) noexcept {
  switch (p) {
    case PrecisionClass::f32: return CUBLAS_COMPUTE_32F;
    case PrecisionClass::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case PrecisionClass::f16: return CUBLAS_COMPUTE_16F;
  }
  return CUBLAS_COMPUTE_32F;
}

inline cublasOperation_t cublas_op(Transpose t) noexcept { return t == Transpose::N ? CUBLAS_OP_N : CUBLAS_OP_T; }

class LtMatmul {
public:
  // Creates the descriptor and the three layouts for `key` through `lt`. Throws kd::Error (cuda)
  // naming the call cuBLASLt refused.
  LtMatmul(const CublasLtLibrary& lt, const GemmShape& key);

  cublasLtMatmulDesc_t desc() const noexcept { return desc_.get(); }
  cublasLtMatrixLayout_t a() const noexcept { return a_.get(); }
  cublasLtMatrixLayout_t b() const noexcept { return b_.get(); }
  cublasLtMatrixLayout_t c() const noexcept { return c_.get(); }
  // Compute 16F: alpha and beta are half values (to_half_bits), otherwise float.
  bool half_scale() const noexcept { return half_scale_; }

  // Sets the bias pointer of an epilogue=bias key. Writes the shared descriptor: only for a single
  // thread that owns this object (the worker). Throws kd::Error (cuda).
  void set_bias(const void* bias);

private:
  struct DescDeleter {
    const CublasLtLibrary* lt;
    void operator()(cublasLtMatmulDesc_t d) const noexcept { lt->cublasLtMatmulDescDestroy(d); }
  };
  struct LayoutDeleter {
    const CublasLtLibrary* lt;
    void operator()(cublasLtMatrixLayout_t l) const noexcept { lt->cublasLtMatrixLayoutDestroy(l); }
  };
  using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
  using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
  Layout layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t stride,
                const char* what);

  const CublasLtLibrary* lt_;
  GemmShape key_;
  Desc desc_;
  Layout a_, b_, c_;
  bool half_scale_ = false;
};

// An owned cuBLASLt handle (cublasLtCreate/cublasLtDestroy).
class LtHandle {
public:
  explicit LtHandle(const CublasLtLibrary& lt);  // throws kd::Error (cuda)
  ~LtHandle();
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  cublasLtHandle_t get() const noexcept { return handle_; }

private:
  const CublasLtLibrary* lt_;
  cublasLtHandle_t handle_ = nullptr;
};

// IEEE half bits of `v` (round to nearest even), for compute-16F scale factors. No allocation.
std::uint16_t to_half_bits(float v) noexcept;

}  // namespace kd
