#include "llm/llm_config.hpp"

#include "contract/name_table.hpp"

namespace kd::llm {
namespace {

constexpr search::NameTable<ApiKind, 2> kApiNames = {{
    {ApiKind::openai_chat, "openai"},
    {ApiKind::anthropic_messages, "anthropic"},
}};

}  // namespace

std::string_view to_string(ApiKind kind) {
  return search::name_in(kApiNames, kind);
}

std::optional<ApiKind> api_kind_from_string(std::string_view name) {
  return search::value_in(kApiNames, name);
}

}  // namespace kd::llm
