// What a key line may contain beyond the spelling of each token and beyond the GEMM's own rules
// (key/gemm_rules.hpp): digits, and the characters a device part may hold so that its printed line
// tokenizes back to the same part. Shared by the parser (which reports the column) and the
// printer. Internal to key/.
#pragma once

#include <optional>
#include <string_view>

namespace kd::line_rules {

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

}  // namespace kd::line_rules
