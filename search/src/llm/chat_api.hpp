// The two wire formats, one table row each: OpenAI-compatible chat completions (OpenAI, vLLM,
// llama.cpp server, Ollama, SGLang) and Anthropic messages. Each row builds the HTTP request for a
// system + user prompt and parses a 2xx reply into text, finish reason and token usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "llm/api_key.hpp"
#include "llm/http_client.hpp"
#include "llm/llm_config.hpp"
#include "llm/token_budget.hpp"

namespace kd::llm {

struct ChatRequest {
  std::string system;
  std::string user;
  std::int64_t max_tokens = 4096;
  double temperature = 0.7;
};

enum class FinishReason : std::uint8_t {
  stop,    // the model ended its answer (OpenAI "stop", Anthropic "end_turn"/"stop_sequence")
  length,  // cut at max_tokens (OpenAI "length", Anthropic "max_tokens")
  other,   // anything else the server reports (content filter, tool use, missing)
};

struct ChatReply {
  std::string text;
  FinishReason finish = FinishReason::other;
  std::optional<TokenUsage> usage;  // absent when the server reports none (some local servers)
  std::string model;                // as the server names it
  // Filled by LlmClient::complete: the attempts it took and what the budget was charged (the
  // reported usage, or the whole reservation when the server reported none).
  int attempts = 1;
  TokenUsage charged;
};

struct WireError {
  std::string message;  // what is wrong with the reply, e.g. "reply is not JSON: ..."
};

// The URL, headers (auth, content type, API version) and JSON body of one request. The headers hold
// the key: the result is sent and dropped, never logged. A base URL that already ends in "/v1" is
// not given a second one.
HttpRequest build_chat_request(const LlmConfig& config, const ApiKey& key, const ChatRequest& request);

// Parses a 2xx reply body of `api`. Never throws for a bad body.
std::variant<ChatReply, WireError> parse_chat_reply(ApiKind api, std::string_view body);

// The endpoint for `api` under `base_url`, e.g. "http://127.0.0.1:8000/v1/chat/completions".
std::string chat_endpoint(ApiKind api, std::string_view base_url);

}  // namespace kd::llm
