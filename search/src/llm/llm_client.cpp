#include "llm/llm_client.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "llm/http_client.hpp"

namespace kd::llm {
namespace {

using std::chrono::milliseconds;

// A conservative prompt estimate: code and JSON run near 3 characters per token.
std::int64_t estimate_prompt_tokens(const ChatRequest& request) {
  return static_cast<std::int64_t>((request.system.size() + request.user.size()) / 3 + 32);
}

class SlotGuard {
public:
  explicit SlotGuard(std::counting_semaphore<>& slots) : slots_(slots) { slots_.acquire(); }
  ~SlotGuard() { slots_.release(); }
  SlotGuard(const SlotGuard&) = delete;
  SlotGuard& operator=(const SlotGuard&) = delete;

private:
  std::counting_semaphore<>& slots_;
};

bool retryable_status(long status) {
  return status == 429 || (status >= 500 && status <= 599);
}

// The start of a body for an error message: one line, bounded.
std::string excerpt(std::string_view body, std::size_t max_chars = 300) {
  std::string out(body.substr(0, max_chars));
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (body.size() > max_chars) out += "...";
  return out;
}

// What one attempt came to: a final result, or a retryable failure with the server's wait.
struct Retry {
  ReplyFate fate;
  std::string message;
  std::optional<milliseconds> retry_after;
};

}  // namespace

LlmClient::LlmClient(LlmConfig config, std::shared_ptr<TokenBudget> budget)
    : config_(std::move(config)),
      key_(load_api_key(config_.key)),
      budget_(budget ? std::move(budget) : std::make_shared<TokenBudget>()),
      slots_(std::max<std::ptrdiff_t>(config_.max_concurrent_requests, 1)),
      rng_(std::random_device{}()) {
  if (config_.max_concurrent_requests < 1) {
    throw Error(ErrorDomain::usage, 0, "llm: max_concurrent_requests must be at least 1");
  }
  if (config_.retry.max_attempts < 1) {
    throw Error(ErrorDomain::usage, 0, "llm: retry.max_attempts must be at least 1");
  }
}

milliseconds LlmClient::backoff(int attempt) {
  const auto& r = config_.retry;
  const int doublings = std::clamp(attempt - 1, 0, 20);
  const milliseconds full = std::min(r.initial_backoff * (std::int64_t{1} << doublings), r.max_backoff);
  // Jitter in [full/2, full] so that clients rejected together do not come back together.
  std::lock_guard lock(rng_mutex_);
  std::uniform_int_distribution<std::int64_t> jitter(full.count() / 2, full.count());
  return milliseconds(jitter(rng_));
}

std::variant<ChatReply, LlmFailure> LlmClient::complete(const ChatRequest& request) {
  const std::string endpoint = redact(chat_endpoint(config_.api, config_.base_url));
  const std::int64_t prompt_estimate = estimate_prompt_tokens(request);
  std::optional<TokenReservation> reservation = budget_->reserve(
      prompt_estimate + config_.min_reply_tokens,
      prompt_estimate + std::max(request.max_tokens, config_.min_reply_tokens));
  if (!reservation) {
    LlmFailure failure{ReplyFate::budget_exhausted,
                       fmt::format("token budget: {} of {} tokens left, a request needs about {}",
                                   budget_->tokens_left(), budget_->limit_tokens(),
                                   prompt_estimate + config_.min_reply_tokens),
                       0, {}};
    spdlog::warn("llm: {}: {}", endpoint, failure.message);
    return failure;
  }
  ChatRequest sized = request;
  sized.max_tokens = reservation->tokens() - prompt_estimate;
  // Charged when the server may have spent tokens that it does not report.
  const TokenUsage whole_reservation{prompt_estimate, sized.max_tokens};
  const HttpRequest http = build_chat_request(config_, key_, sized);
  const HttpLimits limits{config_.connect_timeout, config_.request_timeout,
                          config_.max_response_bytes};

  Retry last{ReplyFate::http_error, "no attempt made", std::nullopt};
  for (int attempt = 1; attempt <= config_.retry.max_attempts; ++attempt) {
    const auto started = std::chrono::steady_clock::now();
    std::variant<HttpResponse, TransportFailure> outcome;
    {
      SlotGuard slot(slots_);
      outcome = http_post(http, limits);
    }
    const auto elapsed_ms = std::chrono::duration_cast<milliseconds>(
        std::chrono::steady_clock::now() - started);

    if (const auto* failure = std::get_if<TransportFailure>(&outcome)) {
      const std::string message = redact(failure->message);
      if (failure->kind == TransportFailureKind::timeout) {
        reservation->settle(whole_reservation);
        spdlog::warn("llm: {}: timed out after {} ms: {}", endpoint, elapsed_ms.count(), message);
        return LlmFailure{ReplyFate::timeout,
                          fmt::format("no reply within {} ms ({})",
                                      config_.request_timeout.count(), message),
                          attempt, whole_reservation};
      }
      if (failure->kind == TransportFailureKind::reply_too_large) {
        reservation->settle(whole_reservation);
        return LlmFailure{ReplyFate::bad_response, message, attempt, whole_reservation};
      }
      last = Retry{failure->kind == TransportFailureKind::connect_failed ? ReplyFate::connect_failed
                                                                         : ReplyFate::http_error,
                   message, std::nullopt};
    } else {
      const auto& response = std::get<HttpResponse>(outcome);
      if (response.status >= 200 && response.status < 300) {
        auto parsed = parse_chat_reply(config_.api, response.body);
        if (auto* error = std::get_if<WireError>(&parsed)) {
          reservation->settle(whole_reservation);
          const std::string message = redact(error->message);
          spdlog::warn("llm: {}: bad reply: {}", endpoint, message);
          return LlmFailure{ReplyFate::bad_response, message, attempt, whole_reservation};
        }
        auto& reply = std::get<ChatReply>(parsed);
        reply.text = redact(reply.text);
        const TokenUsage charged = reply.usage.value_or(whole_reservation);
        reservation->settle(charged);
        reply.attempts = attempt;
        reply.charged = charged;
        spdlog::info("llm: {} model {}: {} prompt + {} completion tokens in {} ms (attempt {})",
                     endpoint, redact(reply.model), charged.prompt_tokens,
                     charged.completion_tokens, elapsed_ms.count(), attempt);
        return std::move(reply);
      }
      const std::string message =
          redact(fmt::format("HTTP {}: {}", response.status, excerpt(response.body)));
      if (!retryable_status(response.status)) {
        spdlog::warn("llm: {}: {}", endpoint, message);
        return LlmFailure{ReplyFate::http_error, message, attempt, {}};
      }
      last = Retry{ReplyFate::http_error, message, response.retry_after};
    }

    if (attempt == config_.retry.max_attempts) break;
    if (last.retry_after && *last.retry_after > config_.retry.max_retry_after) {
      last.message += fmt::format(" (server asks to wait {} ms, more than the {} ms allowed)",
                                  last.retry_after->count(), config_.retry.max_retry_after.count());
      spdlog::warn("llm: {}: {}", endpoint, last.message);
      return LlmFailure{last.fate, last.message, attempt, {}};
    }
    const milliseconds wait = std::max(backoff(attempt), last.retry_after.value_or(milliseconds(0)));
    spdlog::warn("llm: {}: attempt {}/{}: {}; retrying in {} ms", endpoint, attempt,
                 config_.retry.max_attempts, last.message, wait.count());
    std::this_thread::sleep_for(wait);
  }
  spdlog::warn("llm: {}: giving up after {} attempts: {}", endpoint, config_.retry.max_attempts,
               last.message);
  return LlmFailure{last.fate,
                    fmt::format("{} (after {} attempts)", last.message, config_.retry.max_attempts),
                    config_.retry.max_attempts, {}};
}

}  // namespace kd::llm
