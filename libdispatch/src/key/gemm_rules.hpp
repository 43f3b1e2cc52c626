// What a GEMM call may be keyed as: the one home of the type rules (which a/b/c/compute
// combinations kdispatch keys), the precision class a call gets, and the size and batch-layout
// rules of a keyed call. The key parser, the C API (kd_gemm_desc -> GemmShape, kd_gemm_desc_check)
// and, through the C API, the cuBLAS shim all ask here.
#pragma once

#include <cstdint>
#include <optional>

#include "key/gemm_shape.hpp"

namespace kd {

// a == b is checked separately. C is the input type, or f32 for f16/bf16 inputs (cublasGemmEx
// with CUDA_R_32F output and 16-bit inputs).
constexpr bool c_type_allowed(DType ab, DType c) {
  return c == ab || (c == DType::f32 && (ab == DType::f16 || ab == DType::bf16));
}

// CUBLAS_COMPUTE_32F takes every combination above; CUBLAS_COMPUTE_16F only f16 in and out.
constexpr bool compute_allowed(DType ab, DType c, ComputeType compute) {
  return compute == ComputeType::f32 || (ab == DType::f16 && c == DType::f16);
}

// compute f32 is strict f32 or TF32-allowed; compute f16 is f16 only.
constexpr bool precision_allowed(ComputeType compute, PrecisionClass precision) {
  return compute == ComputeType::f32
             ? (precision == PrecisionClass::f32 || precision == PrecisionClass::tf32)
             : precision == PrecisionClass::f16;
}

constexpr PrecisionClass default_precision(ComputeType compute) {
  return compute == ComputeType::f16 ? PrecisionClass::f16 : PrecisionClass::f32;
}

// Whether the caller allows TF32 products: cuBLAS's CUBLAS_TF32_TENSOR_OP_MATH handle mode or the
// compute type CUBLAS_COMPUTE_32F_FAST_TF32 (kdispatch.h's KD_MATH_TF32_ALLOWED).
enum class MathMode : std::uint8_t { default_math, tf32_allowed };

// The precision class a call gets: compute f16 -> f16; compute f32 -> tf32 when TF32 is allowed
// and A is f32, else f32. f16 and bf16 values are exact in TF32, so 16-bit inputs keep the strict
// class whatever the math mode says (ARCHITECTURE.md, "Precision class for 16-bit inputs").
constexpr PrecisionClass precision_class_for(ComputeType compute, MathMode math, DType a) {
  if (compute == ComputeType::f32 && math == MathMode::tf32_allowed && a == DType::f32)
    return PrecisionClass::tf32;
  return default_precision(compute);
}

// Minimum leading dimensions for the transposes (cuBLAS rules): rows of the stored matrix.
constexpr std::int64_t min_lda(const GemmShape& s) { return s.ta == Transpose::N ? s.m : s.k; }
constexpr std::int64_t min_ldb(const GemmShape& s) { return s.tb == Transpose::N ? s.k : s.n; }

// Why a call is not keyed (kdispatch.h's kd_gemm_desc_problem, after KD_DESC_INVALID).
enum class ShapeProblem : std::uint8_t {
  data_type,     // a != b, or c neither the input type nor f32 with 16-bit inputs
  compute_type,  // compute f16 without f16 a, b and c
  shape,         // m, n, k or batch below 1, or a leading dimension too small
  batch_layout,  // negative strides, batch entries whose C overlap, a bias with batch > 1
};

// nullopt when `s` (strides 0 when batch == 1; precision not read) is a call kdispatch keys,
// otherwise the first problem in the order above. A shape it accepts prints to a line parse_key
// reads back to the same shape (tested). Batches whose outputs overlap are refused because their
// result under concurrent kernels is not defined.
std::optional<ShapeProblem> shape_problem(const GemmShape& s) noexcept;

}  // namespace kd
