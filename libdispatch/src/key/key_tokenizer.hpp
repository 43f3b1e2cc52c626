// Splits a key line into tokens without copying: blank-separated words, where a value that starts
// with a double quote (`gpu="NVIDIA H100 80GB HBM3"`) runs to the closing quote. Internal to key/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "key/gemm_key.hpp"

namespace kd::key_tokens {

struct Token {
  std::string_view text;   // as written, quotes included
  std::string_view name;   // before the first '='; empty when there is no '='
  std::string_view value;  // after the first '=', quotes included
  std::size_t column = 0;  // 1-based column of the token's first character in the whole line
  bool has_equals = false;
};

// ' ', '\t', '\n', '\v', '\f', '\r'.
constexpr bool is_blank(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }

// A KeyError whose message starts with "column N: ".
KeyError error_at(std::size_t column, std::string_view message);
// "column N: token 'TEXT': REASON".
KeyError token_error(const Token& token, std::string_view reason);

// Reads tokens left to right with one token of lookahead. Columns count bytes of the original
// line, so they stay right with leading blanks. Views point into the line given at construction.
class Tokenizer {
public:
  explicit Tokenizer(std::string_view line);

  using Next = std::variant<std::monostate, Token, KeyError>;

  // The next token without consuming it; monostate at the end of the line; a KeyError for an
  // unterminated quote or text glued to a closing quote. Valid until advance().
  const Next& peek();
  // Consumes the token peek() returned.
  void advance();
  // The column just after the last non-blank character: where a missing token would have started.
  std::size_t end_column() const noexcept { return end_ + 1; }

private:
  Next scan();

  std::string_view line_;
  std::size_t pos_ = 0;  // next byte to scan
  std::size_t end_ = 0;  // one past the last non-blank byte
  std::optional<Next> lookahead_;
};

}  // namespace kd::key_tokens
