// One HTTP POST over a libcurl easy handle, with connect and whole-request timeouts and a cap on
// the reply's size. No retries, no logging: the caller (LlmClient) owns both. Request headers may
// carry the API key, so a request is never logged or stored.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kd::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may hold the key
  std::string body;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  // From a Retry-After header (delta-seconds or an HTTP date), when the server sent one.
  std::optional<std::chrono::milliseconds> retry_after;
};

enum class TransportFailureKind { timeout, connect_failed, reply_too_large, other };

struct TransportFailure {
  TransportFailureKind kind = TransportFailureKind::other;
  std::string message;  // curl's error text; holds neither headers nor body
};

struct HttpLimits {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{300'000};
  std::size_t max_response_bytes = 8 * 1024 * 1024;
};

// Sends `request` and waits for the whole reply. Any HTTP status is a response; only transport
// failures are TransportFailure. Thread-safe: each call uses its own easy handle. Throws kd::Error
// only when libcurl cannot be initialised.
std::variant<HttpResponse, TransportFailure> http_post(const HttpRequest& request,
                                                       const HttpLimits& limits);

}  // namespace kd::llm
