#include "protocol/messages.hpp"

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
          [](const Published& p) {
            return json{{"type", "published"}, {"key", p.key}, {"generation", p.generation}};
          },
          [](const ErrorMessage& e) { return json{{"type", "error"}, {"message", e.message}}; },
          [](const Acknowledged& a) { return json{{"type", a.type}}; },
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
    {"published",
     [](const json& j) -> Message {
       return Published{string_field(j, "key"), unsigned_field(j, "generation")};
     }},
    {"error", [](const json& j) -> Message { return ErrorMessage{string_field(j, "message")}; }},
    {"hello_ok", [](const json&) -> Message { return Acknowledged{"hello_ok"}; }},
    {"ok", [](const json&) -> Message { return Acknowledged{"ok"}; }},
};

}  // namespace

std::string to_json(const Message& m) { return to_object(m).dump(); }

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

std::filesystem::path daemon_socket_path(const std::filesystem::path& cache_dir) {
  if (const char* s = std::getenv("KD_SOCKET"); s != nullptr && *s != '\0') return s;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0')
    return std::filesystem::path(x) / "kdispatch.sock";
  return cache_dir / "kdispatch.sock";
}

}  // namespace kd::protocol
