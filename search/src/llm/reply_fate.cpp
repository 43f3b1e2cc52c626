#include "llm/reply_fate.hpp"

#include "contract/name_table.hpp"

namespace kd::llm {
namespace {

constexpr search::NameTable<ReplyFate, 11> kNames = {{
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
  return search::name_in(kNames, fate);
}

}  // namespace kd::llm
