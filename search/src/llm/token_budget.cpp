#include "llm/token_budget.hpp"

#include <algorithm>

namespace kd::llm {

TokenReservation::TokenReservation(TokenReservation&& other) noexcept
    : budget_(other.budget_), tokens_(other.tokens_) {
  other.budget_ = nullptr;
}

TokenReservation::~TokenReservation() {
  if (budget_) budget_->release(tokens_, TokenUsage{});
}

void TokenReservation::settle(const TokenUsage& usage) {
  if (!budget_) return;
  budget_->release(tokens_, usage);
  budget_ = nullptr;
}

std::optional<TokenReservation> TokenBudget::reserve(std::int64_t min_tokens,
                                                     std::int64_t max_tokens) {
  min_tokens = std::max<std::int64_t>(min_tokens, 0);
  max_tokens = std::max(max_tokens, min_tokens);
  std::int64_t committed = committed_.load();
  for (;;) {
    const std::int64_t left = limit_tokens_ - committed;
    if (left < min_tokens) return std::nullopt;
    const std::int64_t take = std::min(left, max_tokens);
    if (committed_.compare_exchange_weak(committed, committed + take)) {
      return TokenReservation(this, take);
    }
  }
}

std::int64_t TokenBudget::tokens_left() const noexcept {
  return std::max<std::int64_t>(limit_tokens_ - committed_.load(), 0);
}

void TokenBudget::release(std::int64_t reserved, const TokenUsage& charged) {
  prompt_used_ += charged.prompt_tokens;
  completion_used_ += charged.completion_tokens;
  committed_ += charged.total() - reserved;
}

}  // namespace kd::llm
