#include "key/key_tokenizer.hpp"

#include <array>
#include <charconv>

namespace kd::key_tokens {

KeyError error_at(std::size_t column, std::string_view message) {
  KeyError e;
  e.column = column;
  std::array<char, 24> digits{};
  const auto res = std::to_chars(digits.data(), digits.data() + digits.size(), column);
  e.message.reserve(16 + message.size());
  e.message += "column ";
  e.message.append(digits.data(), res.ptr);
  e.message += ": ";
  e.message += message;
  return e;
}

KeyError token_error(const Token& token, std::string_view reason) {
  std::string message;
  message.reserve(token.text.size() + reason.size() + 12);
  message += "token '";
  message += token.text;
  message += "': ";
  message += reason;
  return error_at(token.column, message);
}

Tokenizer::Tokenizer(std::string_view line) : line_(line), end_(line.size()) {
  while (end_ > 0 && is_blank(line_[end_ - 1])) --end_;
}

const Tokenizer::Next& Tokenizer::peek() {
  if (!lookahead_) lookahead_ = scan();
  return *lookahead_;
}

void Tokenizer::advance() {
  if (!lookahead_) scan();
  lookahead_.reset();
}

Tokenizer::Next Tokenizer::scan() {
  while (pos_ < end_ && is_blank(line_[pos_])) ++pos_;
  if (pos_ >= end_) return std::monostate{};

  const std::size_t begin = pos_;
  Token t;
  t.column = begin + 1;
  std::size_t i = begin;
  while (i < end_ && !is_blank(line_[i]) && line_[i] != '=') ++i;
  if (i < end_ && line_[i] == '=') {
    t.has_equals = true;
    t.name = line_.substr(begin, i - begin);
    ++i;
    if (i < end_ && line_[i] == '"') {
      const std::size_t close = line_.find('"', i + 1);
      if (close == std::string_view::npos || close >= end_) {
        t.text = line_.substr(begin, end_ - begin);
        pos_ = end_;
        return token_error(t, "unterminated quote");
      }
      i = close + 1;
      if (i < end_ && !is_blank(line_[i])) {
        while (i < end_ && !is_blank(line_[i])) ++i;
        t.text = line_.substr(begin, i - begin);
        pos_ = i;
        return token_error(t, "text after the closing quote");
      }
    } else {
      while (i < end_ && !is_blank(line_[i])) ++i;
    }
    t.value = line_.substr(begin + t.name.size() + 1, i - begin - t.name.size() - 1);
  }
  t.text = line_.substr(begin, i - begin);
  pos_ = i;
  return t;
}

}  // namespace kd::key_tokens
