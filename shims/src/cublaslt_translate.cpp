#include "cublaslt_translate.hpp"

#include <array>
#include <cstdint>
#include <optional>

#include "cuda_enums.hpp"
#include "real_cublas.hpp"

namespace kd::shim {
namespace {

// One attribute through a cuBLASLt getter (cublasLtMatmulDescGetAttribute and
// cublasLtMatrixLayoutGetAttribute share this form); nullopt when the getter is missing or fails.
template <class T, class Object, class Attribute>
std::optional<T> attribute(cublasStatus_t (*get)(Object, Attribute, void*, std::size_t, std::size_t*),
                           Object object, Attribute attr) noexcept {
  if (get == nullptr) return std::nullopt;
  T value{};
  std::size_t written = 0;
  if (get(object, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  return value;
}

template <class T>
std::optional<T> desc_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr) noexcept {
  return attribute<T>(real_cublas().lt_desc_get.get(), desc, attr);
}

template <class T>
std::optional<T> layout_attr(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr) noexcept {
  return attribute<T>(real_cublas().lt_layout_get.get(), layout, attr);
}

struct Desc {
  std::int32_t compute = 0, scale = 0, pointer_mode = 0, transa = 0, transb = 0, transc = 0;
  std::uint32_t epilogue = 0;
  const void* bias = nullptr;
  std::int32_t bias_type = -1;
};

std::optional<Desc> read_desc(cublasLtMatmulDesc_t d) noexcept {
  const auto compute = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE);
  const auto scale = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE);
  const auto pointer_mode = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_POINTER_MODE);
  const auto transa = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_TRANSA);
  const auto transb = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_TRANSB);
  const auto transc = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_TRANSC);
  const auto epilogue = desc_attr<std::uint32_t>(d, CUBLASLT_MATMUL_DESC_EPILOGUE);
  const auto bias = desc_attr<const void*>(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  const auto bias_type = desc_attr<std::int32_t>(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
  if (!compute || !scale || !pointer_mode || !transa || !transb || !transc || !epilogue || !bias ||
      !bias_type) {
    return std::nullopt;
  }
  return Desc{*compute, *scale, *pointer_mode, *transa, *transb, *transc, *epilogue, *bias,
              *bias_type};
}

// Descriptor attributes the key does not model: fp8/block scaling and FP32 emulation. Each must
// hold its default (zero / NULL), else the call is forwarded (lt_attribute).
enum class AttrWidth : std::uint8_t { i8, i32, ptr };
struct DefaultOnlyAttr {
  cublasLtMatmulDescAttributes_t attr;
  AttrWidth width;
};
constexpr std::array<DefaultOnlyAttr, 13> kDefaultOnlyAttrs{{
    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, AttrWidth::ptr},
    {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, AttrWidth::i32},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, AttrWidth::i32},
    {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, AttrWidth::i32},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, AttrWidth::i32},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, AttrWidth::i32},
    {CUBLASLT_MATMUL_DESC_FAST_ACCUM, AttrWidth::i8},
}};

// nullopt: all at default; otherwise the reason (a failed read is handle_state).
std::optional<Unsupported> check_default_only(cublasLtMatmulDesc_t d) noexcept {
  for (const DefaultOnlyAttr& a : kDefaultOnlyAttrs) {
    bool is_default = false;
    switch (a.width) {
      case AttrWidth::i8: {
        const auto v = desc_attr<std::int8_t>(d, a.attr);
        if (!v) return Unsupported::handle_state;
        is_default = *v == 0;
        break;
      }
      case AttrWidth::i32: {
        const auto v = desc_attr<std::int32_t>(d, a.attr);
        if (!v) return Unsupported::handle_state;
        is_default = *v == 0;
        break;
      }
      case AttrWidth::ptr: {
        const auto v = desc_attr<const void*>(d, a.attr);
        if (!v) return Unsupported::handle_state;
        is_default = *v == nullptr;
        break;
      }
    }
    if (!is_default) return Unsupported::lt_attribute;
  }
  return std::nullopt;
}

struct Layout {
  std::uint32_t type = 0;
  std::int32_t order = 0;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
  std::int32_t batch = 1;
  std::int64_t stride = 0, plane_offset = 0;
  std::uint32_t batch_mode = 0;
  bool operator==(const Layout&) const = default;
};

std::optional<Layout> read_layout(cublasLtMatrixLayout_t l) noexcept {
  const auto type = layout_attr<std::uint32_t>(l, CUBLASLT_MATRIX_LAYOUT_TYPE);
  const auto order = layout_attr<std::int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ORDER);
  const auto rows = layout_attr<std::uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_ROWS);
  const auto cols = layout_attr<std::uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_COLS);
  const auto ld = layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_LD);
  const auto batch = layout_attr<std::int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
  const auto stride = layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
  const auto plane = layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET);
  const auto mode = layout_attr<std::uint32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE);
  if (!type || !order || !rows || !cols || !ld || !batch || !stride || !plane || !mode) {
    return std::nullopt;
  }
  return Layout{*type, *order, *rows, *cols, *ld, *batch, *stride, *plane, *mode};
}

bool plain_column_major(const Layout& l) noexcept {
  return l.order == CUBLASLT_ORDER_COL && l.plane_offset == 0 && l.batch_mode == 0;
}

// The scale type cuBLASLt requires for each keyed compute type (alpha/beta are of this type).
cudaDataType scale_type_for(kd_compute compute) noexcept {
  return compute == KD_COMPUTE_F16 ? CUDA_R_16F : CUDA_R_32F;
}

std::optional<kd_epilogue> epilogue_of(std::uint32_t e) noexcept {
  if (e == CUBLASLT_EPILOGUE_DEFAULT) return KD_EPILOGUE_NONE;
  if (e == CUBLASLT_EPILOGUE_BIAS) return KD_EPILOGUE_BIAS;
  return std::nullopt;
}

}  // namespace

Translation translate_cublaslt(const LtMatmulArgs& x) noexcept {
  if (x.desc == nullptr || x.alpha == nullptr || x.beta == nullptr || x.a == nullptr ||
      x.b == nullptr || x.c == nullptr || x.d == nullptr || x.a_layout == nullptr ||
      x.b_layout == nullptr || x.c_layout == nullptr || x.d_layout == nullptr) {
    return Unsupported::null_argument;
  }
  const std::optional<Desc> desc = read_desc(x.desc);
  if (!desc) return Unsupported::handle_state;
  if (desc->pointer_mode != CUBLASLT_POINTER_MODE_HOST) return Unsupported::device_scalars;
  const auto compute = compute_of(static_cast<cublasComputeType_t>(desc->compute));
  if (!compute || desc->scale != static_cast<std::int32_t>(scale_type_for(compute->compute))) return Unsupported::compute_type;
  const auto epilogue = epilogue_of(desc->epilogue);
  if (!epilogue) return Unsupported::epilogue;
  const auto ta = op_of(desc->transa), tb = op_of(desc->transb);
  if (!ta || !tb || desc->transc != CUBLAS_OP_N) return Unsupported::transpose;
  if (const auto why = check_default_only(x.desc)) return *why;

  const auto la = read_layout(x.a_layout), lb = read_layout(x.b_layout);
  const auto lc = read_layout(x.c_layout), ld = read_layout(x.d_layout);
  if (!la || !lb || !lc || !ld) return Unsupported::handle_state;
  if (!plain_column_major(*la) || !plain_column_major(*lb) || !plain_column_major(*lc)) {
    return Unsupported::layout;
  }
  // The kernel contract writes C in place: D must be C, laid out the same.
  if (x.d != x.c || !(*ld == *lc)) return Unsupported::layout;

  const auto a = dtype_of(static_cast<cudaDataType>(la->type));
  const auto b = dtype_of(static_cast<cudaDataType>(lb->type));
  const auto c = dtype_of(static_cast<cudaDataType>(lc->type));
  if (!a || !b || !c) return Unsupported::data_type;

  // Layouts hold the stored matrices: op(A) is m x k, so a transposed A is stored k x m.
  const auto dim = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  const std::int64_t m = *ta == KD_OP_N ? dim(la->rows) : dim(la->cols);
  const std::int64_t k = *ta == KD_OP_N ? dim(la->cols) : dim(la->rows);
  const std::int64_t kb = *tb == KD_OP_N ? dim(lb->rows) : dim(lb->cols);
  const std::int64_t n = *tb == KD_OP_N ? dim(lb->cols) : dim(lb->rows);
  if (kb != k || dim(lc->rows) != m || dim(lc->cols) != n) return Unsupported::layout;
  if (la->batch != lb->batch || la->batch != lc->batch) return Unsupported::batch_layout;

  GemmCall call;
  kd_gemm_desc& key = call.desc;
  key.a_type = *a;
  key.b_type = *b;
  key.c_type = *c;
  key.compute = compute->compute;
  key.math = math_of(*compute, HandleMath::default_math);
  key.ta = *ta;
  key.tb = *tb;
  key.m = m;
  key.n = n;
  key.k = k;
  key.lda = la->ld;
  key.ldb = lb->ld;
  key.ldc = lc->ld;
  key.batch = la->batch;
  if (key.batch > 1) {
    key.stride_a = la->stride;
    key.stride_b = lb->stride;
    key.stride_c = lc->stride;
  }
  key.epilogue = *epilogue;
  if (const auto why = unsupported_desc(key)) return *why;
  if (key.epilogue == KD_EPILOGUE_BIAS) {
    if (desc->bias == nullptr) return Unsupported::null_argument;
    // -1: the bias has D's type, which the kernel contract assumes.
    if (desc->bias_type != -1 && desc->bias_type != static_cast<std::int32_t>(lc->type)) {
      return Unsupported::data_type;
    }
    call.bias = desc->bias;
  }

  set_scalars(call, x.alpha, x.beta);
  call.a = x.a;
  call.b = x.b;
  call.c = x.d;
  call.stream = x.stream;
  call.workspace = x.workspace;
  call.workspace_bytes = x.workspace_bytes;
  return call;
}

}  // namespace kd::shim
