#include "llm/chat_api.hpp"

#include <array>

#include <nlohmann/json.hpp>

namespace kd::llm {
namespace {

using nlohmann::json;

std::optional<std::int64_t> int_field(const json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string string_field(const json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The reply's model and, when its usage object holds both counts, the tokens spent: the two APIs
// name the prompt's and the completion's fields differently.
void read_model_and_usage(const json& reply, const char* prompt_field, const char* completion_field,
                          ChatReply& out) {
  out.model = string_field(reply, "model");
  if (const auto usage = reply.find("usage"); usage != reply.end() && usage->is_object()) {
    const auto prompt = int_field(*usage, prompt_field);
    const auto completion = int_field(*usage, completion_field);
    if (prompt && completion) out.usage = TokenUsage{*prompt, *completion};
  }
}

// ---- OpenAI-compatible chat completions ----------------------------------------------------------

std::vector<std::string> openai_headers(const LlmConfig&, const ApiKey& key) {
  std::vector<std::string> headers = {"Content-Type: application/json", "Accept: application/json"};
  if (!key.empty()) headers.push_back("Authorization: Bearer " + key.reveal());
  return headers;
}

json openai_body(const LlmConfig& config, const ChatRequest& request) {
  return {{"model", config.model},
          {"messages", json::array({{{"role", "system"}, {"content", request.system}},
                                    {{"role", "user"}, {"content", request.user}}})},
          {"max_tokens", request.max_tokens},
          {"temperature", request.temperature},
          {"stream", false}};
}

std::variant<ChatReply, WireError> openai_parse(const json& reply) {
  const auto choices = reply.find("choices");
  if (choices == reply.end() || !choices->is_array() || choices->empty() ||
      !choices->front().is_object()) {
    return WireError{"reply has no choices"};
  }
  const json& choice = choices->front();
  const auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) return WireError{"choice has no message"};
  const auto content = message->find("content");
  if (content == message->end() || !content->is_string()) {
    return WireError{"message has no text content"};
  }
  ChatReply out;
  out.text = content->get<std::string>();
  const std::string finish = string_field(choice, "finish_reason");
  out.finish = finish == "stop" ? FinishReason::stop
               : finish == "length" ? FinishReason::length
                                    : FinishReason::other;
  read_model_and_usage(reply, "prompt_tokens", "completion_tokens", out);
  return out;
}

// ---- Anthropic messages --------------------------------------------------------------------------

std::vector<std::string> anthropic_headers(const LlmConfig& config, const ApiKey& key) {
  std::vector<std::string> headers = {"content-type: application/json",
                                      "anthropic-version: " + config.anthropic_version};
  if (!key.empty()) headers.push_back("x-api-key: " + key.reveal());
  return headers;
}

json anthropic_body(const LlmConfig& config, const ChatRequest& request) {
  return {{"model", config.model},
          {"max_tokens", request.max_tokens},
          {"temperature", request.temperature},
          {"system", request.system},
          {"messages", json::array({{{"role", "user"}, {"content", request.user}}})}};
}

std::variant<ChatReply, WireError> anthropic_parse(const json& reply) {
  const auto content = reply.find("content");
  if (content == reply.end() || !content->is_array()) return WireError{"reply has no content"};
  ChatReply out;
  bool any_text = false;
  for (const json& block : *content) {
    if (block.is_object() && string_field(block, "type") == "text") {
      out.text += string_field(block, "text");
      any_text = true;
    }
  }
  if (!any_text) return WireError{"reply has no text block"};
  const std::string stop = string_field(reply, "stop_reason");
  out.finish = stop == "end_turn" || stop == "stop_sequence" ? FinishReason::stop
               : stop == "max_tokens"                        ? FinishReason::length
                                                             : FinishReason::other;
  read_model_and_usage(reply, "input_tokens", "output_tokens", out);
  return out;
}

struct ChatWire {
  ApiKind api;
  std::string_view path;  // after ".../v1"
  std::vector<std::string> (*headers)(const LlmConfig&, const ApiKey&);
  json (*body)(const LlmConfig&, const ChatRequest&);
  std::variant<ChatReply, WireError> (*parse)(const json&);
};

constexpr std::array<ChatWire, 2> kWires = {{
    {ApiKind::openai_chat, "/chat/completions", &openai_headers, &openai_body, &openai_parse},
    {ApiKind::anthropic_messages, "/messages", &anthropic_headers, &anthropic_body,
     &anthropic_parse},
}};

const ChatWire& wire_for(ApiKind api) {
  for (const ChatWire& wire : kWires) {
    if (wire.api == api) return wire;
  }
  return kWires.front();
}

}  // namespace

std::string chat_endpoint(ApiKind api, std::string_view base_url) {
  while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
  std::string url(base_url);
  if (!url.ends_with("/v1")) url += "/v1";
  return url + std::string(wire_for(api).path);
}

HttpRequest build_chat_request(const LlmConfig& config, const ApiKey& key,
                               const ChatRequest& request) {
  const ChatWire& wire = wire_for(config.api);
  return HttpRequest{chat_endpoint(config.api, config.base_url), wire.headers(config, key),
                     wire.body(config, request).dump()};
}

std::variant<ChatReply, WireError> parse_chat_reply(ApiKind api, std::string_view body) {
  const json reply = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    return WireError{"reply is not complete JSON (" + std::to_string(body.size()) + " bytes)"};
  }
  if (!reply.is_object()) return WireError{"reply is not a JSON object"};
  return wire_for(api).parse(reply);
}

}  // namespace kd::llm
