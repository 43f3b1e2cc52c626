// What became of one LLM request or of one candidate taken from its reply. The names are stored in
// search nodes and printed by `kdctl show`, so a value's name never changes meaning.
#pragma once

#include <cstdint>
#include <string_view>

namespace kd::llm {

enum class ReplyFate : std::uint8_t {
  ok,
  budget_exhausted,     // refused before sending: the job's token budget cannot cover the request
  connect_failed,       // no connection to the server (after the retries)
  timeout,              // no complete reply within the request timeout (not retried)
  http_error,           // a non-2xx status: 4xx at once, 429/5xx once the retries ran out
  bad_response,         // a 2xx reply whose JSON is truncated, malformed or lacks the text
  truncated,            // the model stopped at max_tokens before its answer was complete
  no_code,              // prose with no kernel in it
  no_plan,              // a kernel without a `kdispatch:plan` comment
  no_ideas,             // an ideas reply that is neither a JSON array of strings nor a list
  static_check_failed,  // the contract's static checks rejected the candidate (see its status)
};

// Stable snake_case name, e.g. "no_plan".
std::string_view to_string(ReplyFate fate);

}  // namespace kd::llm
