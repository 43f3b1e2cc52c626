// A key line a test needs parsed: the key, or a test failure naming the line and the parser's
// message (the test goes on with a default key).
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>
#include <variant>

#include "key/gemm_key.hpp"

namespace kd::test {

inline GemmKey parsed_key(std::string_view line) {
  auto result = parse_key(line);
  if (const auto* e = std::get_if<KeyError>(&result)) {
    ADD_FAILURE() << "rejected: " << line << "\n  " << e->message;
    return {};
  }
  return std::get<GemmKey>(std::move(result));
}

}  // namespace kd::test
