// cuBLAS / CUDA enum values -> the C API's values (kdispatch.h): one table per enum. A value
// missing from a table is a call the shim does not key.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <optional>

#include "kdispatch/kdispatch.h"

namespace kd::shim {

std::optional<kd_dtype> dtype_of(cudaDataType t) noexcept;
// CUBLAS_OP_N -> N, CUBLAS_OP_T -> T; CUBLAS_OP_C (and anything else) is not keyed.
std::optional<kd_op> op_of(int op) noexcept;

// When a compute type may use TF32 products (on f32 inputs).
enum class Tf32Use : std::uint8_t { never, by_math_mode, always };
struct ComputeInfo {
  kd_compute compute;
  Tf32Use tf32;
};
// CUBLAS_COMPUTE_32F (TF32 by math mode), _32F_PEDANTIC (never), _32F_FAST_TF32 (always),
// _16F (f16). Others (64F, 32I, FAST_16F, FAST_16BF, 16F_PEDANTIC) are not keyed.
std::optional<ComputeInfo> compute_of(cublasComputeType_t t) noexcept;

// The handle's math mode as the TF32 rule needs it; nullopt for CUBLAS_TENSOR_OP_MATH
// (deprecated; allows down-conversion below TF32) and unknown modes. The
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION bit is ignored: tuned kernels reduce in the
// compute type.
enum class HandleMath : std::uint8_t { default_math, pedantic, tf32 };
std::optional<HandleMath> handle_math_of(cublasMath_t mode) noexcept;

// Whether the call allows TF32 products (kd_math): the compute type's rule, and for
// CUBLAS_COMPUTE_32F the handle's math mode; pedantic math never. The precision class that
// follows from it and from the input type is libkdispatch's to decide.
kd_math math_of(const ComputeInfo& compute, HandleMath math) noexcept;

// IEEE binary16 bits -> float (exact).
float half_bits_to_float(std::uint16_t bits) noexcept;

// alpha or beta read from host memory: cuBLAS and cuBLASLt pass them in the scale type of the
// compute type, a half for KD_COMPUTE_F16 and a float for KD_COMPUTE_F32. `p` is not null.
float read_host_scalar(const void* p, kd_compute compute) noexcept;

}  // namespace kd::shim
