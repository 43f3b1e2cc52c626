// What a valid key may contain, beyond the spelling of each token: the data type combinations
// cuBLAS accepts for a GEMM we key, the precision classes each compute type can have, and the
// characters a device part may hold so that its printed line tokenizes back to the same part.
// Shared by the parser (which reports the column) and the printer. Internal to key/.
#pragma once

#include <optional>
#include <string_view>

#include "key/gemm_key.hpp"

namespace kd::key_rules {

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

constexpr bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
constexpr bool is_control(char ch) {
  return static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) == 0x7f;
}

// `sm_` then digits then optional lowercase letters ("sm_90", "sm_90a", "sm_100f"); nullopt when
// valid, else why not.
constexpr std::optional<std::string_view> arch_problem(std::string_view arch) {
  constexpr std::string_view kPrefix = "sm_";
  if (arch.substr(0, kPrefix.size()) != kPrefix) return "expected sm_<digits>, e.g. sm_90";
  std::size_t i = kPrefix.size();
  const std::size_t digits_begin = i;
  while (i < arch.size() && is_digit(arch[i])) ++i;
  if (i == digits_begin) return "expected sm_<digits>, e.g. sm_90";
  while (i < arch.size() && arch[i] >= 'a' && arch[i] <= 'z') ++i;
  if (i != arch.size()) {
    return "expected sm_<digits> with an optional lowercase suffix, e.g. sm_90a";
  }
  return std::nullopt;
}

// The name as the driver reports it, printed between double quotes: not empty, no quote, no
// control character (a line is one line).
constexpr std::optional<std::string_view> gpu_name_problem(std::string_view name) {
  if (name.empty()) return "empty GPU name";
  for (const char ch : name) {
    if (ch == '"') return "GPU name contains a double quote";
    if (is_control(ch)) return "GPU name contains a control character";
  }
  return std::nullopt;
}

}  // namespace kd::key_rules
