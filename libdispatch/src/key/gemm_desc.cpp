#include "key/gemm_desc.hpp"

#include "key/gemm_rules.hpp"

namespace kd {
namespace {

// The C API's enums carry the key's numbering by construction, checked here.
static_assert(KD_DTYPE_F16 == static_cast<int>(DType::f16) &&
              KD_DTYPE_BF16 == static_cast<int>(DType::bf16) &&
              KD_DTYPE_F32 == static_cast<int>(DType::f32));
static_assert(KD_COMPUTE_F16 == static_cast<int>(ComputeType::f16) &&
              KD_COMPUTE_F32 == static_cast<int>(ComputeType::f32));
static_assert(KD_OP_N == static_cast<int>(Transpose::N) && KD_OP_T == static_cast<int>(Transpose::T));
static_assert(KD_EPILOGUE_NONE == static_cast<int>(Epilogue::none) &&
              KD_EPILOGUE_BIAS == static_cast<int>(Epilogue::bias));
static_assert(KD_MATH_DEFAULT == static_cast<int>(MathMode::default_math) &&
              KD_MATH_TF32_ALLOWED == static_cast<int>(MathMode::tf32_allowed));
static_assert(KD_DESC_DATA_TYPE == KD_DESC_INVALID + 1 + static_cast<int>(ShapeProblem::data_type) &&
              KD_DESC_COMPUTE_TYPE == KD_DESC_INVALID + 1 + static_cast<int>(ShapeProblem::compute_type) &&
              KD_DESC_SHAPE == KD_DESC_INVALID + 1 + static_cast<int>(ShapeProblem::shape) &&
              KD_DESC_BATCH_LAYOUT == KD_DESC_INVALID + 1 + static_cast<int>(ShapeProblem::batch_layout));

bool in_range(int v, int count) { return v >= 0 && v < count; }

}  // namespace

kd_gemm_desc_problem read_gemm_desc(const kd_gemm_desc& d, GemmShape& s) noexcept {
  if (!in_range(d.ta, 2) || !in_range(d.tb, 2) || !in_range(d.a_type, 3) || !in_range(d.b_type, 3) ||
      !in_range(d.c_type, 3) || !in_range(d.compute, 2) || !in_range(d.math, 2) ||
      !in_range(d.epilogue, 2))
    return KD_DESC_INVALID;
  if (d.batch == 1 && (d.stride_a != 0 || d.stride_b != 0 || d.stride_c != 0)) return KD_DESC_INVALID;
  s = GemmShape{};
  s.m = d.m;
  s.n = d.n;
  s.k = d.k;
  s.lda = d.lda;
  s.ldb = d.ldb;
  s.ldc = d.ldc;
  s.batch = d.batch;
  s.stride_a = d.stride_a;
  s.stride_b = d.stride_b;
  s.stride_c = d.stride_c;
  s.a = static_cast<DType>(d.a_type);
  s.b = static_cast<DType>(d.b_type);
  s.c = static_cast<DType>(d.c_type);
  s.compute = static_cast<ComputeType>(d.compute);
  s.precision = precision_class_for(s.compute, static_cast<MathMode>(d.math), s.a);
  s.ta = static_cast<Transpose>(d.ta);
  s.tb = static_cast<Transpose>(d.tb);
  s.epilogue = static_cast<Epilogue>(d.epilogue);
  s.beta_zero = d.beta_zero != 0;
  if (const auto problem = shape_problem(s))
    return static_cast<kd_gemm_desc_problem>(KD_DESC_INVALID + 1 + static_cast<int>(*problem));
  return KD_DESC_KEYABLE;
}

}  // namespace kd
