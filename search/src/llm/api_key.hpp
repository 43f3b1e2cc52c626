// The LLM API key: read from an environment variable or from a file only its owner can read, held
// in one move-only object, and redacted from any text before that text is logged or returned.
// The key is never logged, never put in an error message and never stored in the cache.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <variant>

namespace kd::llm {

class ApiKey {
public:
  ApiKey() = default;  // no key: local servers (vLLM, llama.cpp server, Ollama) often need none
  explicit ApiKey(std::string value) : value_(std::move(value)) {}
  ~ApiKey();  // overwrites the secret before freeing it
  ApiKey(ApiKey&&) noexcept = default;
  ApiKey& operator=(ApiKey&&) noexcept = default;
  ApiKey(const ApiKey&) = delete;
  ApiKey& operator=(const ApiKey&) = delete;

  bool empty() const noexcept { return value_.empty(); }
  // The secret, for the one place that builds the request's auth header. Never log or store it.
  const std::string& reveal() const noexcept { return value_; }
  // `text` with every occurrence of the key replaced by "[redacted]"; `text` itself when empty.
  std::string redact(std::string_view text) const;

private:
  std::string value_;
};

struct NoKey {};
struct KeyFromEnv {
  std::string variable;  // e.g. "OPENAI_API_KEY"
};
struct KeyFromFile {
  std::filesystem::path path;
};
using KeySource = std::variant<NoKey, KeyFromEnv, KeyFromFile>;

// Reads the key. Throws kd::Error (usage) naming the variable or file, never the key, when the
// variable is unset or empty; when the file is missing, not a regular file, a symlink, not owned
// by the effective user, readable or writable by group or others (its mode must be 0600 or 0400),
// larger than 64 KiB or empty. Surrounding whitespace (a trailing newline) is trimmed.
ApiKey load_api_key(const KeySource& source);

}  // namespace kd::llm
