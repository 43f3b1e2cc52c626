#include "protocol/messages.hpp"

#include <cstdlib>
#include <limits>

#include "protocol/frame.hpp"

namespace kd::protocol {

using nlohmann::json;

void to_json(json& j, const HelloOk& m) {
  j = {{"version", m.version}, {"daemon", m.daemon}, {"generation", m.generation}};
  if (!m.features.empty()) j["features"] = m.features;
}
// Read leniently: a client needs only its features, and what older daemons sent varies.
void from_json(const json& j, HelloOk& m) {
  field::optional(j, "version", m.version);
  field::optional(j, "daemon", m.daemon);
  field::optional(j, "generation", m.generation);
  field::optional(j, "features", m.features);
}

void to_json(json& j, const Subscribed& m) { j = {{"generation", m.generation}}; }
void from_json(const json& j, Subscribed& m) { field::required(j, "generation", m.generation); }

void to_json(json& j, const Published& m) {
  j = {{"key", m.key}, {"generation", m.generation}};
  field::put_optional(j, "evicted", m.evicted);
}
void from_json(const json& j, Published& m) {
  field::required(j, "key", m.key);
  field::required(j, "generation", m.generation);
  field::optional(j, "evicted", m.evicted);
}

void to_json(json& j, const ErrorMessage& m) {
  j = {{"message", truncate_utf8(m.message, kMaxErrorMessageBytes)}};
}
void from_json(const json& j, ErrorMessage& m) { field::required(j, "message", m.message); }

void to_json(json& j, const Hello& m) { j = {{"pid", m.pid}, {"client", m.client}}; }
void from_json(const json& j, Hello& m) {
  std::uint64_t pid = 0;
  field::required(j, "pid", pid);
  m.pid = static_cast<std::int64_t>(pid);
  field::required(j, "client", m.client);
}

void to_json(json& j, const MissEntry& m) { j = {{"key", m.key}, {"count", m.count}}; }
void from_json(const json& j, MissEntry& m) {
  field::required(j, "key", m.key);
  field::optional(j, "count", m.count);
}

// One key goes as `key` and `count`, the form every daemon has read; a batch as `keys`.
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

void to_json(json& j, const Subscribe&) { j = json::object(); }
void from_json(const json&, Subscribe&) {}

void to_json(json& j, const ClientStats& m) {
  j = {{"pid", m.pid},          {"program", m.program},     {"instance", m.instance},
       {"hits", m.hits},        {"misses", m.misses},       {"fallbacks", m.fallbacks},
       {"loads", m.loads},      {"swaps", m.swaps}};
  if (m.final) j["final"] = true;
}

// Every field is checked before the daemon counts anything: a report outside the limits is a
// protocol error.
void from_json(const json& j, ClientStats& m) {
  std::uint64_t pid = 0;
  field::required(j, "pid", pid);
  if (pid > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    field::fail("protocol: field 'pid' is not a process id");
  m.pid = static_cast<std::int64_t>(pid);
  field::required(j, "program", m.program);
  field::required(j, "instance", m.instance);
  field::required(j, "hits", m.hits);
  field::required(j, "misses", m.misses);
  const auto f = j.find("fallbacks");
  if (f == j.end() || !f->is_object())
    field::fail("protocol: field 'fallbacks' must be an object of reason -> count");
  if (f->size() > kMaxFallbackReasons)
    field::fail("protocol: client_stats 'fallbacks' names more than " + std::to_string(kMaxFallbackReasons) +
                " reasons");
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (!it.value().is_number_unsigned())
      field::fail("protocol: fallback count '" + truncate_utf8(it.key(), kMaxReasonNameBytes) +
                  "' must be a non-negative integer");
    m.fallbacks.emplace(it.key(), it.value().get<std::uint64_t>());
  }
  field::optional(j, "loads", m.loads);
  field::optional(j, "swaps", m.swaps);
  field::optional(j, "final", m.final);
  if (auto problem = client_stats_problem(m)) field::fail(std::move(*problem));
}

void to_json(json& j, const Usage& m) { j = {{"keys", m.keys}}; }
void from_json(const json& j, Usage& m) {
  const std::string expected = "an array of at most " + std::to_string(kMaxUsageKeys) + " key lines";
  field::required(j, "keys", m.keys, expected);
  if (m.keys.size() > kMaxUsageKeys) field::mistyped("keys", expected);
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
