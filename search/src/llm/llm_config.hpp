// How to reach one LLM: which wire API, where, which model, the key's source, timeouts, retries,
// concurrency and reply size. Filled by the daemon's config loader (or a test); no I/O here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llm/api_key.hpp"

namespace kd::llm {

enum class ApiKind : std::uint8_t {
  openai_chat,        // POST {base}/v1/chat/completions: OpenAI, vLLM, llama.cpp server, Ollama, SGLang
  anthropic_messages, // POST {base}/v1/messages
};

std::string_view to_string(ApiKind kind);                         // "openai", "anthropic"
std::optional<ApiKind> api_kind_from_string(std::string_view name);

struct RetryPolicy {
  int max_attempts = 4;                                  // 1 = no retry
  std::chrono::milliseconds initial_backoff{500};        // doubled after each retryable failure
  std::chrono::milliseconds max_backoff{20'000};
  // A Retry-After longer than this is not waited for: the request fails as http_error.
  std::chrono::milliseconds max_retry_after{60'000};
};

struct LlmConfig {
  ApiKind api = ApiKind::openai_chat;
  std::string base_url = "http://127.0.0.1:8000";  // without the /v1/... path
  std::string model;
  KeySource key = NoKey{};
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{300'000};  // per attempt, whole reply
  RetryPolicy retry;
  std::ptrdiff_t max_concurrent_requests = 4;
  std::int64_t max_reply_tokens = 8192;   // max_tokens of each request, lowered to fit the budget
  std::int64_t min_reply_tokens = 512;    // below this the request is refused as budget_exhausted
  double temperature = 0.7;
  std::size_t max_response_bytes = 8 * 1024 * 1024;
  std::string anthropic_version = "2023-06-01";
};

}  // namespace kd::llm
