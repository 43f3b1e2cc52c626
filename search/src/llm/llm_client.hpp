// One LLM endpoint: builds the request for its wire API, reserves the token budget, sends with
// retries (exponential backoff with jitter on 429, 5xx and failed connections, honouring
// Retry-After), limits requests in flight, charges the reply's usage. Logs through spdlog; the key
// is redacted from every log line and every message it returns.
#pragma once

#include <memory>
#include <mutex>
#include <random>
#include <semaphore>
#include <string>
#include <string_view>
#include <variant>

#include "llm/api_key.hpp"
#include "llm/chat_api.hpp"
#include "llm/llm_config.hpp"
#include "llm/reply_fate.hpp"
#include "llm/token_budget.hpp"

namespace kd::llm {

// Why a request gave no usable reply. `message` is one line, safe to log and store.
struct LlmFailure {
  ReplyFate fate = ReplyFate::http_error;
  std::string message;
  int attempts = 0;
  TokenUsage charged;  // what the budget was charged for it
};

class LlmClient {
public:
  // Loads the key from config.key. Throws kd::Error (usage) when the key cannot be loaded safely
  // (see load_api_key), max_concurrent_requests < 1 or retry.max_attempts < 1. `budget` is
  // shared with the job; a null one is unlimited.
  LlmClient(LlmConfig config, std::shared_ptr<TokenBudget> budget);

  // Sends system + user; request.max_tokens is an upper bound, lowered to what the budget has left
  // (refused as budget_exhausted below config.min_reply_tokens). Thread-safe; callers past
  // config.max_concurrent_requests wait for a slot. Fates: ok (the reply), budget_exhausted,
  // connect_failed, timeout (not retried: a reply that slow would likely be slow again, and the
  // server may already be spending tokens on it), http_error, bad_response. A timeout or a 2xx
  // reply without usable usage is charged the whole reservation, so the budget errs on the safe
  // side. Never throws for anything the server does.
  std::variant<ChatReply, LlmFailure> complete(const ChatRequest& request);

  const LlmConfig& config() const noexcept { return config_; }
  const TokenBudget& budget() const noexcept { return *budget_; }
  // `text` with the key redacted: for anything derived from a reply before it is stored.
  std::string redact(std::string_view text) const { return key_.redact(text); }

private:
  std::chrono::milliseconds backoff(int attempt);

  LlmConfig config_;
  ApiKey key_;
  std::shared_ptr<TokenBudget> budget_;
  std::counting_semaphore<> slots_;
  std::mutex rng_mutex_;
  std::minstd_rand rng_;
};

}  // namespace kd::llm
