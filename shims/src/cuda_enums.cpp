#include "cuda_enums.hpp"

#include <array>
#include <bit>
#include <cstring>
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

constexpr std::array<std::pair<cudaDataType, kd_dtype>, 3> kDTypes{{
    {CUDA_R_16F, KD_DTYPE_F16}, {CUDA_R_16BF, KD_DTYPE_BF16}, {CUDA_R_32F, KD_DTYPE_F32}}};

constexpr std::array<std::pair<int, kd_op>, 2> kOps{{{CUBLAS_OP_N, KD_OP_N}, {CUBLAS_OP_T, KD_OP_T}}};

constexpr std::array<std::pair<cublasComputeType_t, ComputeInfo>, 4> kComputeTypes{{
    {CUBLAS_COMPUTE_32F, {KD_COMPUTE_F32, Tf32Use::by_math_mode}},
    {CUBLAS_COMPUTE_32F_PEDANTIC, {KD_COMPUTE_F32, Tf32Use::never}},
    {CUBLAS_COMPUTE_32F_FAST_TF32, {KD_COMPUTE_F32, Tf32Use::always}},
    {CUBLAS_COMPUTE_16F, {KD_COMPUTE_F16, Tf32Use::never}}}};

constexpr std::array<std::pair<int, HandleMath>, 3> kMathModes{{
    {CUBLAS_DEFAULT_MATH, HandleMath::default_math},
    {CUBLAS_PEDANTIC_MATH, HandleMath::pedantic},
    {CUBLAS_TF32_TENSOR_OP_MATH, HandleMath::tf32}}};

}  // namespace

std::optional<kd_dtype> dtype_of(cudaDataType t) noexcept { return find(kDTypes, t); }
std::optional<kd_op> op_of(int op) noexcept { return find(kOps, op); }
std::optional<ComputeInfo> compute_of(cublasComputeType_t t) noexcept {
  return find(kComputeTypes, t);
}

std::optional<HandleMath> handle_math_of(cublasMath_t mode) noexcept {
  const int base = static_cast<int>(mode) & ~static_cast<int>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  return find(kMathModes, base);
}

kd_math math_of(const ComputeInfo& compute, HandleMath math) noexcept {
  if (math == HandleMath::pedantic) return KD_MATH_DEFAULT;
  const bool tf32 = compute.tf32 == Tf32Use::always ||
                    (compute.tf32 == Tf32Use::by_math_mode && math == HandleMath::tf32);
  return tf32 ? KD_MATH_TF32_ALLOWED : KD_MATH_DEFAULT;
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

float read_host_scalar(const void* p, kd_compute compute) noexcept {
  if (compute == KD_COMPUTE_F16) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, p, sizeof bits);
    return half_bits_to_float(bits);
  }
  float v = 0.0f;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace kd::shim
