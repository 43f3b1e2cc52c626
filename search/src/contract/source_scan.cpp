#include "contract/source_scan.hpp"

#include <cctype>

namespace kd::search {
namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Replaces [from, to) of `out` with spaces, keeping newlines.
void blank(std::string& out, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to && i < out.size(); ++i) {
    if (out[i] != '\n') out[i] = ' ';
  }
}

// End (one past the closing quote) of the quoted literal opening at `open`; escapes honoured.
std::size_t quoted_end(std::string_view s, std::size_t open) {
  const char quote = s[open];
  std::size_t i = open + 1;
  while (i < s.size() && s[i] != quote && s[i] != '\n') i += (s[i] == '\\') ? 2 : 1;
  return i < s.size() ? i + 1 : s.size();
}

// A raw string R"delim( ... )delim" opening with the quote at `quote`; returns its end.
std::size_t raw_string_end(std::string_view s, std::size_t quote) {
  const std::size_t paren = s.find('(', quote);
  if (paren == std::string_view::npos) return s.size();
  // Built by append: GCC 12 at -O3 misreports operator+ on strings here (-Wrestrict, PR105329).
  std::string close(1, ')');
  close.append(s.substr(quote + 1, paren - quote - 1));
  close.push_back('"');
  const std::size_t end = s.find(close, paren);
  return end == std::string_view::npos ? s.size() : end + close.size();
}

bool raw_string_prefix(std::string_view s, std::size_t quote) {
  if (quote == 0 || s[quote - 1] != 'R') return false;
  std::size_t start = quote - 1;
  while (start > 0 && is_ident_char(s[start - 1])) --start;
  const std::string_view prefix = s.substr(start, quote - start);
  return prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
}

}  // namespace

std::string strip_comments(std::string_view source, StringLiterals literals) {
  std::string out(source);
  std::size_t i = 0;
  while (i < source.size()) {
    const char c = source[i];
    const char next = i + 1 < source.size() ? source[i + 1] : '\0';
    if (c == '/' && next == '/') {
      std::size_t end = i;
      // A backslash before the newline continues a line comment.
      while (end < source.size() && !(source[end] == '\n' && source[end - 1] != '\\')) ++end;
      blank(out, i, end);
      i = end;
    } else if (c == '/' && next == '*') {
      const std::size_t close = source.find("*/", i + 2);
      const std::size_t end = close == std::string_view::npos ? source.size() : close + 2;
      blank(out, i, end);
      i = end;
    } else if (c == '"' || (c == '\'' && !(i > 0 && is_ident_char(source[i - 1])))) {
      // A quote after an identifier character is a digit separator (1'000), not a literal.
      const std::size_t end =
          (c == '"' && raw_string_prefix(source, i)) ? raw_string_end(source, i) : quoted_end(source, i);
      const bool extern_c = source.substr(i, end - i) == "\"C\"";
      if (literals == StringLiterals::blank && !extern_c && end - i >= 2) blank(out, i + 1, end - 1);
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> tokens;
  std::size_t line = 1;
  bool line_start = true;  // only whitespace so far on this logical line
  bool in_directive = false;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      const bool continued = i > 0 && s[i - 1] == '\\';
      ++line;
      ++i;
      if (!continued) {
        in_directive = false;
        line_start = true;
      }
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
      continue;
    }
    if (c == '#' && line_start) in_directive = true;
    line_start = false;
    std::size_t end = i + 1;
    TokenKind kind = TokenKind::punct;
    if (is_ident_char(c)) {
      kind = std::isdigit(static_cast<unsigned char>(c)) ? TokenKind::number : TokenKind::identifier;
      while (end < s.size() && (is_ident_char(s[end]) || (kind == TokenKind::number && s[end] == '.'))) {
        ++end;
      }
      // A string-literal prefix (R, u8, L, ...) belongs to the literal that follows.
      if (end < s.size() && s[end] == '"' && kind == TokenKind::identifier) {
        kind = TokenKind::string;
        end = raw_string_prefix(s, end) ? raw_string_end(s, end) : quoted_end(s, end);
      }
    } else if (c == '"' || c == '\'') {
      kind = TokenKind::string;
      end = quoted_end(s, i);
    }
    const std::string_view text = s.substr(i, end - i);
    tokens.push_back({kind, text, line, in_directive});
    for (const char ch : text) line += (ch == '\n') ? 1 : 0;
    i = end;
  }
  return tokens;
}

}  // namespace kd::search
