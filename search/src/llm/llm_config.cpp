#include "llm/llm_config.hpp"

#include <array>
#include <utility>

namespace kd::llm {
namespace {

constexpr std::array<std::pair<ApiKind, std::string_view>, 2> kApiNames = {{
    {ApiKind::openai_chat, "openai"},
    {ApiKind::anthropic_messages, "anthropic"},
}};

}  // namespace

std::string_view to_string(ApiKind kind) {
  for (const auto& [value, name] : kApiNames) {
    if (value == kind) return name;
  }
  return "unknown";
}

std::optional<ApiKind> api_kind_from_string(std::string_view name) {
  for (const auto& [value, known] : kApiNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace kd::llm
