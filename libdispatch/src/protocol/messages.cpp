#include "protocol/messages.hpp"

#include <cstdlib>
#include <limits>

#include "protocol/frame.hpp"

namespace kd::protocol {

using nlohmann::json;

// One key goes as `key` and `count`, the form every daemon has read; a batch as `keys`. (The one
// message whose fields are not a plain list: its conversions are written out.)
void to_json(json& j, const Miss& m) {
  if (m.keys.size() == 1) {
    to_json(j, m.keys.front());
  } else {
    j = {{"keys", m.keys}};
  }
  if (m.hits != 0) j["hits"] = m.hits;
  if (m.ack) j["ack"] = true;
}
void from_json(const json& j, Miss& m) {
  if (j.contains("keys")) {
    field::required(j, "keys", m.keys, "an array of {key, count} objects");
  } else {
    from_json(j, m.keys.emplace_back());
  }
  field::optional(j, "hits", m.hits);
  field::optional(j, "ack", m.ack);
}

void ClientStats::check(const ClientStats& m) {
  field::non_negative("pid", m.pid);
  if (m.pid > std::numeric_limits<std::int32_t>::max()) field::fail("protocol: field 'pid' is not a process id");
  if (auto problem = client_stats_problem(m)) field::fail(std::move(*problem));
}

std::string encode_message(const ClientMessage& m) {
  return std::visit([](const auto& message) { return encode(message); }, m);
}

std::optional<std::string> client_stats_problem(const ClientStats& s) {
  const auto all_of = [](std::string_view text, auto allowed) {
    for (const char ch : text)
      if (!allowed(ch)) return false;
    return true;
  };
  const auto id_char = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
  };
  const auto reason_char = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  };
  if (s.pid < 0) return "protocol: client_stats 'pid' must be a non-negative integer";
  if (s.program.size() > kMaxProgramBytes)
    return "protocol: client_stats 'program' is longer than " + std::to_string(kMaxProgramBytes) + " bytes";
  if (!all_of(s.program, [](char ch) { return ch >= 0x20 && ch <= 0x7e; }))
    return "protocol: client_stats 'program' must be printable ASCII";
  if (s.instance.empty() || s.instance.size() > kMaxInstanceBytes || !all_of(s.instance, id_char))
    return "protocol: client_stats 'instance' must be 1 to " + std::to_string(kMaxInstanceBytes) +
           " characters of [A-Za-z0-9_-]";
  if (s.fallbacks.size() > kMaxFallbackReasons)
    return "protocol: client_stats 'fallbacks' names more than " + std::to_string(kMaxFallbackReasons) +
           " reasons";
  for (const auto& [name, count] : s.fallbacks)
    if (name.empty() || name.size() > kMaxReasonNameBytes || !all_of(name, reason_char))
      return "protocol: client_stats fallback reason '" + name.substr(0, kMaxReasonNameBytes) +
             "' must be 1 to " + std::to_string(kMaxReasonNameBytes) + " characters of [a-z0-9_]";
  return std::nullopt;
}

std::filesystem::path daemon_socket_path(const std::filesystem::path& cache_dir) {
  if (const char* s = std::getenv("KD_SOCKET"); s != nullptr && *s != '\0') return s;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0')
    return std::filesystem::path(x) / "kdispatch.sock";
  return cache_dir / "kdispatch.sock";
}

}  // namespace kd::protocol
