#include "cublaslt/matmul.hpp"

#include <cstring>

namespace kd {

LtMatmul::LtMatmul(const CublasLtLibrary& lt, const GemmShape& key)
    : lt_(&lt), key_(key), desc_(nullptr, DescDeleter{&lt}), a_(nullptr, LayoutDeleter{&lt}),
      b_(nullptr, LayoutDeleter{&lt}), c_(nullptr, LayoutDeleter{&lt}) {
  const std::string what = shape_line(key);
  half_scale_ = key.precision == PrecisionClass::f16;
  cublasLtMatmulDesc_t desc = nullptr;
  KD_LT_CHECK(lt.cublasLtMatmulDescCreate(&desc, cublas_compute_type(key.precision),
                                          half_scale_ ? CUDA_R_16F : CUDA_R_32F),
              what);
  desc_.reset(desc);
  const cublasOperation_t ta = cublas_op(key.ta), tb = cublas_op(key.tb);
  KD_LT_CHECK(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), what);
  KD_LT_CHECK(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), what);
  if (key.epilogue == Epilogue::bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    KD_LT_CHECK(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), what);
  }
  const bool a_n = key.ta == Transpose::N, b_n = key.tb == Transpose::N;
  a_ = layout(key.a, a_n ? key.m : key.k, a_n ? key.k : key.m, key.lda, key.stride_a, "layout A");
  b_ = layout(key.b, b_n ? key.k : key.n, b_n ? key.n : key.k, key.ldb, key.stride_b, "layout B");
  c_ = layout(key.c, key.m, key.n, key.ldc, key.stride_c, "layout C");
}

LtMatmul::Layout LtMatmul::layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                  std::int64_t stride, const char* what) {
  cublasLtMatrixLayout_t raw = nullptr;
  KD_LT_CHECK(lt_->cublasLtMatrixLayoutCreate(&raw, cuda_data_type(t), static_cast<std::uint64_t>(rows),
                                              static_cast<std::uint64_t>(cols), ld),
              what);
  Layout l(raw, LayoutDeleter{lt_});
  if (key_.batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(key_.batch);
    KD_LT_CHECK(lt_->cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof(count)),
                what);
    KD_LT_CHECK(lt_->cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &stride, sizeof(stride)),
                what);
  }
  return l;
}

void LtMatmul::set_bias(const void* bias) {
  KD_LT_CHECK(lt_->cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                  sizeof(bias)),
              "bias pointer");
}

LtHandle::LtHandle(const CublasLtLibrary& lt) : lt_(&lt) {
  KD_LT_CHECK(lt.cublasLtCreate(&handle_), "cuBLASLt handle");
}

LtHandle::~LtHandle() {
  if (handle_ != nullptr) lt_->cublasLtDestroy(handle_);
}

std::uint16_t to_half_bits(float v) noexcept {
  const _Float16 h = static_cast<_Float16>(v);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

}  // namespace kd
