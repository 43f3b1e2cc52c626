// Lexical helpers for the static candidate checks: strip comments and literals so that a check never
// fires on text inside a comment or a string, and split the rest into tokens with line numbers.
// Not a C++ parser: it knows comments, string/char/raw-string literals, digit separators,
// preprocessor lines and identifiers, which is all the checks need.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kd::search {

enum class StringLiterals { keep, blank };

// `source` with every comment replaced by spaces and, with StringLiterals::blank, the contents of
// every string and character literal too (the quotes stay). The literal "C" (as in extern "C") is
// always kept. Newlines are kept, so offsets and line numbers match the original.
std::string strip_comments(std::string_view source, StringLiterals literals);

enum class TokenKind { identifier, number, string, punct };

struct Token {
  TokenKind kind;
  std::string_view text;   // a view into the stripped text passed to tokenize()
  std::size_t line;        // 1-based
  bool in_directive;       // on a preprocessor line (#include, #define, ...)
};

// Tokens of `stripped` (output of strip_comments). Punctuation is one character per token.
std::vector<Token> tokenize(std::string_view stripped);

}  // namespace kd::search
