// The job's LLM token budget, shared by every request of one search (any thread). A request first
// reserves what it may cost (its prompt estimate plus its max_tokens); the reply's reported usage
// is then charged and the rest of the reservation returned. Because max_tokens is lowered to fit
// what is left, the budget holds even with requests in flight, up to the error of the prompt
// estimate (the server's count of prompt tokens is only known afterwards).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>

namespace kd::llm {

struct TokenUsage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t total() const { return prompt_tokens + completion_tokens; }
};

class TokenBudget;

// A held part of the budget. Released (uncharged) when destroyed unless settled.
class TokenReservation {
public:
  TokenReservation(TokenReservation&& other) noexcept;
  TokenReservation& operator=(TokenReservation&&) = delete;
  TokenReservation(const TokenReservation&) = delete;
  TokenReservation& operator=(const TokenReservation&) = delete;
  ~TokenReservation();

  std::int64_t tokens() const noexcept { return tokens_; }
  // Charges `usage` to the budget (even beyond the reservation: what was spent was spent) and
  // returns the reservation. Settling twice charges once.
  void settle(const TokenUsage& usage);

private:
  friend class TokenBudget;
  TokenReservation(TokenBudget* budget, std::int64_t tokens) : budget_(budget), tokens_(tokens) {}
  TokenBudget* budget_;
  std::int64_t tokens_;
};

class TokenBudget {
public:
  static constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max() / 4;

  explicit TokenBudget(std::int64_t limit_tokens = kUnlimited) : limit_tokens_(limit_tokens) {}
  TokenBudget(const TokenBudget&) = delete;
  TokenBudget& operator=(const TokenBudget&) = delete;

  // Reserves the most tokens in [min_tokens, max_tokens] that the budget has left, or nullopt
  // when fewer than min_tokens are left. Lock-free.
  std::optional<TokenReservation> reserve(std::int64_t min_tokens, std::int64_t max_tokens);

  std::int64_t limit_tokens() const noexcept { return limit_tokens_; }
  std::int64_t prompt_tokens_used() const noexcept { return prompt_used_.load(); }
  std::int64_t completion_tokens_used() const noexcept { return completion_used_.load(); }
  std::int64_t tokens_used() const noexcept { return prompt_tokens_used() + completion_tokens_used(); }
  // limit - (used + reserved), at least 0.
  std::int64_t tokens_left() const noexcept;

private:
  friend class TokenReservation;
  void release(std::int64_t reserved, const TokenUsage& charged);

  const std::int64_t limit_tokens_;
  std::atomic<std::int64_t> committed_{0};  // used + reserved
  std::atomic<std::int64_t> prompt_used_{0};
  std::atomic<std::int64_t> completion_used_{0};
};

}  // namespace kd::llm
