// Replies and kernel sources for the LLM tests.
#pragma once

#include <string>
#include <string_view>

namespace kd::llm::test {

// A contract-abiding kernel; `scale` makes distinct sources.
std::string good_kernel(std::string_view entry = "kd_main", int scale = 1);
// Host code: a main() and a runtime API call.
std::string host_code_kernel();
// A kernel without a kdispatch:plan comment.
std::string planless_kernel();
// `source` in a ```cuda fence.
std::string fenced(std::string_view source, std::string_view language = "cuda");

}  // namespace kd::llm::test
