#include "llm/reply_fate.hpp"

#include <array>
#include <utility>

namespace kd::llm {
namespace {

constexpr std::array<std::pair<ReplyFate, std::string_view>, 11> kNames = {{
    {ReplyFate::ok, "ok"},
    {ReplyFate::budget_exhausted, "budget_exhausted"},
    {ReplyFate::connect_failed, "connect_failed"},
    {ReplyFate::timeout, "timeout"},
    {ReplyFate::http_error, "http_error"},
    {ReplyFate::bad_response, "bad_response"},
    {ReplyFate::truncated, "truncated"},
    {ReplyFate::no_code, "no_code"},
    {ReplyFate::no_plan, "no_plan"},
    {ReplyFate::no_ideas, "no_ideas"},
    {ReplyFate::static_check_failed, "static_check_failed"},
}};

}  // namespace

std::string_view to_string(ReplyFate fate) {
  for (const auto& [value, name] : kNames) {
    if (value == fate) return name;
  }
  return "unknown";
}

}  // namespace kd::llm
