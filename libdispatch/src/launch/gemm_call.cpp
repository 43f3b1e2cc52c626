#include "launch/gemm_call.hpp"

namespace kd {
namespace {

// C API enums -> kd enums; the numbering is the same by construction, checked here.
static_assert(KD_DTYPE_F16 == static_cast<int>(DType::f16) &&
              KD_DTYPE_BF16 == static_cast<int>(DType::bf16) &&
              KD_DTYPE_F32 == static_cast<int>(DType::f32));
static_assert(KD_COMPUTE_F16 == static_cast<int>(ComputeType::f16) &&
              KD_COMPUTE_F32 == static_cast<int>(ComputeType::f32));
static_assert(KD_OP_N == static_cast<int>(Transpose::N) && KD_OP_T == static_cast<int>(Transpose::T));
static_assert(KD_EPILOGUE_NONE == static_cast<int>(Epilogue::none) &&
              KD_EPILOGUE_BIAS == static_cast<int>(Epilogue::bias));

bool in_range(int v, int count) { return v >= 0 && v < count; }

}  // namespace

std::variant<CallKey, FallbackReason, std::monostate> call_key_from_desc(const kd_gemm_desc& d,
                                                                           CUcontext context) noexcept {
  if (!in_range(d.ta, 2) || !in_range(d.tb, 2) || !in_range(d.a_type, 3) || !in_range(d.b_type, 3) ||
      !in_range(d.c_type, 3) || !in_range(d.compute, 2) || !in_range(d.math, 2) ||
      !in_range(d.epilogue, 2))
    return std::monostate{};
  if (d.m < 1 || d.n < 1 || d.k < 1 || d.batch < 1) return std::monostate{};
  const std::int64_t a_rows = d.ta == KD_OP_N ? d.m : d.k;
  const std::int64_t b_rows = d.tb == KD_OP_N ? d.k : d.n;
  if (d.lda < a_rows || d.ldb < b_rows || d.ldc < d.m) return std::monostate{};
  if (d.batch == 1 && (d.stride_a != 0 || d.stride_b != 0 || d.stride_c != 0)) return std::monostate{};
  if (d.batch > 1 && (d.stride_a < 0 || d.stride_b < 0 || d.stride_c < 1)) return std::monostate{};
  // What the key format covers: same input types, and compute f16 only for f16 data.
  if (d.a_type != d.b_type) return FallbackReason::unsupported;
  if (d.compute == KD_COMPUTE_F16 && (d.a_type != KD_DTYPE_F16 || d.c_type != KD_DTYPE_F16))
    return FallbackReason::unsupported;

  CallKey k;
  k.context = reinterpret_cast<std::uintptr_t>(context);
  k.m = d.m;
  k.n = d.n;
  k.k = d.k;
  k.lda = d.lda;
  k.ldb = d.ldb;
  k.ldc = d.ldc;
  k.batch = d.batch;
  k.stride_a = d.stride_a;
  k.stride_b = d.stride_b;
  k.stride_c = d.stride_c;
  k.a = static_cast<std::uint8_t>(d.a_type);
  k.b = static_cast<std::uint8_t>(d.b_type);
  k.c = static_cast<std::uint8_t>(d.c_type);
  k.compute = static_cast<std::uint8_t>(d.compute);
  // Precision class from compute type and math mode (key/gemm_key.hpp, precision_class_for).
  const PrecisionClass precision =
      d.compute == KD_COMPUTE_F16 ? PrecisionClass::f16
      : d.math == KD_MATH_TF32_ALLOWED ? PrecisionClass::tf32
                                       : PrecisionClass::f32;
  k.precision = static_cast<std::uint8_t>(precision);
  k.ta = static_cast<std::uint8_t>(d.ta);
  k.tb = static_cast<std::uint8_t>(d.tb);
  k.epilogue = static_cast<std::uint8_t>(d.epilogue);
  k.beta_zero = d.beta_zero != 0 ? 1 : 0;
  return k;
}

GemmKey to_gemm_key(const CallKey& c) {
  GemmKey k;
  k.a = static_cast<DType>(c.a);
  k.b = static_cast<DType>(c.b);
  k.c = static_cast<DType>(c.c);
  k.compute = static_cast<ComputeType>(c.compute);
  k.ta = static_cast<Transpose>(c.ta);
  k.tb = static_cast<Transpose>(c.tb);
  k.m = c.m;
  k.n = c.n;
  k.k = c.k;
  k.lda = c.lda;
  k.ldb = c.ldb;
  k.ldc = c.ldc;
  k.batch = c.batch;
  k.stride_a = c.stride_a;
  k.stride_b = c.stride_b;
  k.stride_c = c.stride_c;
  k.epilogue = static_cast<Epilogue>(c.epilogue);
  k.beta_zero = c.beta_zero != 0;
  k.precision = static_cast<PrecisionClass>(c.precision);
  return k;
}

}  // namespace kd
