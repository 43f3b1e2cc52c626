#include "cuda_enums.hpp"

#include <array>
#include <bit>
#include <utility>

namespace kd::shim {
namespace {

template <class From, class To, std::size_t N>
std::optional<To> find(const std::array<std::pair<From, To>, N>& table, From v) noexcept {
  for (const auto& [from, to] : table) {
    if (from == v) return to;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<cudaDataType, DType>, 3> kDTypes{{
    {CUDA_R_16F, DType::f16}, {CUDA_R_16BF, DType::bf16}, {CUDA_R_32F, DType::f32}}};

constexpr std::array<std::pair<int, Transpose>, 2> kTransposes{{
    {CUBLAS_OP_N, Transpose::N}, {CUBLAS_OP_T, Transpose::T}}};

constexpr std::array<std::pair<cublasComputeType_t, ComputeInfo>, 4> kComputeTypes{{
    {CUBLAS_COMPUTE_32F, {ComputeType::f32, Tf32Use::by_math_mode}},
    {CUBLAS_COMPUTE_32F_PEDANTIC, {ComputeType::f32, Tf32Use::never}},
    {CUBLAS_COMPUTE_32F_FAST_TF32, {ComputeType::f32, Tf32Use::always}},
    {CUBLAS_COMPUTE_16F, {ComputeType::f16, Tf32Use::never}}}};

constexpr std::array<std::pair<int, HandleMath>, 3> kMathModes{{
    {CUBLAS_DEFAULT_MATH, HandleMath::default_math},
    {CUBLAS_PEDANTIC_MATH, HandleMath::pedantic},
    {CUBLAS_TF32_TENSOR_OP_MATH, HandleMath::tf32}}};

}  // namespace

std::optional<DType> dtype_of(cudaDataType t) noexcept { return find(kDTypes, t); }
std::optional<Transpose> transpose_of(int op) noexcept { return find(kTransposes, op); }
std::optional<ComputeInfo> compute_of(cublasComputeType_t t) noexcept {
  return find(kComputeTypes, t);
}

std::optional<HandleMath> handle_math_of(cublasMath_t mode) noexcept {
  const int base = static_cast<int>(mode) & ~static_cast<int>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  return find(kMathModes, base);
}

MathMode math_mode_of(const ComputeInfo& compute, HandleMath math) noexcept {
  if (math == HandleMath::pedantic) return MathMode::default_math;
  const bool tf32 = compute.tf32 == Tf32Use::always ||
                    (compute.tf32 == Tf32Use::by_math_mode && math == HandleMath::tf32);
  return tf32 ? MathMode::tf32_allowed : MathMode::default_math;
}

float half_bits_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalize into a float.
  std::uint32_t e = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  mantissa &= 0x3ffu;
  return std::bit_cast<float>(sign | (e << 23) | (mantissa << 13));
}

}  // namespace kd::shim
