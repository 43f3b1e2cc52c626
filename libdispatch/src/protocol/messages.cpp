#include "protocol/messages.hpp"

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "protocol/frame.hpp"

namespace kd::protocol {
namespace {

using nlohmann::json;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

json to_object(const Message& m) {
  json j = std::visit(
      Overloaded{
          [](const Hello& h) { return json{{"type", "hello"}, {"pid", h.pid}, {"client", h.client}}; },
          [](const Miss& x) { return json{{"type", "miss"}, {"key", x.key}, {"count", x.count}}; },
          [](const Subscribe&) { return json{{"type", "subscribe"}}; },
          [](const ClientStats& c) {
            json o{{"type", "client_stats"}, {"pid", c.pid},           {"program", c.program},
                   {"instance", c.instance}, {"hits", c.hits},        {"misses", c.misses},
                   {"fallbacks", c.fallbacks}, {"loads", c.loads},    {"swaps", c.swaps}};
            if (c.final) o["final"] = true;
            return o;
          },
          [](const Usage& u) { return json{{"type", "usage"}, {"keys", u.keys}}; },
          [](const Published& p) {
            return json{{"type", "published"}, {"key", p.key}, {"generation", p.generation}};
          },
          [](const ErrorMessage& e) {
            return json{{"type", "error"}, {"message", truncate_utf8(e.message, kMaxErrorMessageBytes)}};
          },
          [](const Acknowledged& a) {
            json o{{"type", a.type}};
            if (!a.features.empty()) o["features"] = a.features;
            return o;
          },
      },
      m);
  j["v"] = kProtocolVersion;
  return j;
}

// Field readers: a missing or mistyped field is a ProtocolError naming it.
struct FieldError {
  std::string message;
};

std::string string_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string())
    throw FieldError{std::string("protocol: field '") + name + "' must be a string"};
  return it->get<std::string>();
}

std::uint64_t unsigned_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_unsigned())
    throw FieldError{std::string("protocol: field '") + name + "' must be a non-negative integer"};
  return it->get<std::uint64_t>();
}

std::uint64_t optional_unsigned(const json& j, const char* name) {
  return j.contains(name) ? unsigned_field(j, name) : 0;
}

bool optional_bool(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return false;
  if (!it->is_boolean()) throw FieldError{std::string("protocol: field '") + name + "' must be a boolean"};
  return it->get<bool>();
}

// Absent: none. Present: an array of strings.
std::vector<std::string> optional_strings(const json& j, const char* name) {
  std::vector<std::string> out;
  auto it = j.find(name);
  if (it == j.end()) return out;
  if (!it->is_array()) throw FieldError{std::string("protocol: field '") + name + "' must be an array of strings"};
  for (const json& e : *it) {
    if (!e.is_string()) throw FieldError{std::string("protocol: field '") + name + "' must be an array of strings"};
    out.push_back(e.get<std::string>());
  }
  return out;
}

Message decode_client_stats(const json& j) {
  ClientStats c;
  c.pid = static_cast<std::int64_t>(unsigned_field(j, "pid"));
  c.program = string_field(j, "program");
  c.instance = string_field(j, "instance");
  c.hits = unsigned_field(j, "hits");
  c.misses = unsigned_field(j, "misses");
  const auto f = j.find("fallbacks");
  if (f == j.end() || !f->is_object())
    throw FieldError{"protocol: field 'fallbacks' must be an object of reason -> count"};
  if (f->size() > kMaxFallbackReasons)
    throw FieldError{"protocol: client_stats 'fallbacks' names more than " +
                     std::to_string(kMaxFallbackReasons) + " reasons"};
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (!it.value().is_number_unsigned())
      throw FieldError{"protocol: fallback count '" + it.key() + "' must be a non-negative integer"};
    c.fallbacks[it.key()] = it.value().get<std::uint64_t>();
  }
  c.loads = optional_unsigned(j, "loads");
  c.swaps = optional_unsigned(j, "swaps");
  c.final = optional_bool(j, "final");
  if (auto problem = client_stats_problem(c)) throw FieldError{*problem};
  return c;
}

using Decoder = Message (*)(const json&);

struct TypeEntry {
  std::string_view type;
  Decoder decode;
};

// One row per message type.
constexpr TypeEntry kTypes[] = {
    {"hello",
     [](const json& j) -> Message {
       return Hello{static_cast<std::int64_t>(unsigned_field(j, "pid")), string_field(j, "client")};
     }},
    {"miss",
     [](const json& j) -> Message { return Miss{string_field(j, "key"), unsigned_field(j, "count")}; }},
    {"subscribe", [](const json&) -> Message { return Subscribe{}; }},
    {"client_stats", decode_client_stats},
    {"usage",
     [](const json& j) -> Message {
       Usage u{optional_strings(j, "keys")};
       if (u.keys.size() > kMaxUsageKeys)
         throw FieldError{"protocol: usage names more than " + std::to_string(kMaxUsageKeys) + " keys"};
       return u;
     }},
    {"published",
     [](const json& j) -> Message {
       return Published{string_field(j, "key"), unsigned_field(j, "generation")};
     }},
    {"error", [](const json& j) -> Message { return ErrorMessage{string_field(j, "message")}; }},
    {"hello_ok",
     [](const json& j) -> Message { return Acknowledged{"hello_ok", optional_strings(j, "features")}; }},
    {"ok", [](const json&) -> Message { return Acknowledged{"ok", {}}; }},
};

}  // namespace

std::string to_json(const Message& m) {
  return to_object(m).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  std::size_t cut = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Back up over continuation bytes (10xxxxxx) so that a multi-byte character is not split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kEllipsis.substr(0, std::min(kEllipsis.size(), max_bytes)));
}

std::string encode_message(const Message& m) { return encode_frame(to_json(m)); }

std::variant<Message, ProtocolError> decode_message(std::string_view payload) noexcept {
  try {
    const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return ProtocolError{"protocol: bad JSON"};
    if (!j.is_object()) return ProtocolError{"protocol: payload is not a JSON object"};
    auto v = j.find("v");
    if (v == j.end() || !v->is_number_integer())
      return ProtocolError{"protocol: missing version field 'v'"};
    if (v->get<std::int64_t>() != kProtocolVersion)
      return ProtocolError{"protocol: version " + std::to_string(v->get<std::int64_t>()) +
                           ", expected " + std::to_string(kProtocolVersion)};
    const std::string type = string_field(j, "type");
    for (const TypeEntry& t : kTypes)
      if (t.type == type) return t.decode(j);
    return ProtocolError{"protocol: unknown message type '" + type + "'"};
  } catch (const FieldError& e) {
    return ProtocolError{e.message};
  } catch (const std::exception& e) {
    return ProtocolError{std::string("protocol: ") + e.what()};
  }
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
