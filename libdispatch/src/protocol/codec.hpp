// The daemon protocol's one codec: every message is a struct (messages.hpp: what libkdispatch
// speaks; requests.hpp: the operator's requests and their replies; status.hpp: the status and stats
// replies) with nlohmann's typed conversions, to_json and from_json, found by argument-dependent
// lookup (`json j = message;`, `j.get<Miss>()`). The daemon, kdctl's client and libkdispatch's
// client encode and decode only through them.
//
// Every payload is a JSON object with "v": kProtocolVersion and "type": the struct's kType. A
// from_json checks each field's JSON type and the bounds of PROTOCOL.md and throws
// ProtocolViolation naming the field ("protocol: field 'pid' must be a non-negative integer");
// unknown fields are ignored (forward compatibility). Encoding never throws for text a peer sent:
// invalid UTF-8 is replaced (U+FFFD).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace kd::protocol {

inline constexpr int kProtocolVersion = 1;

// A payload that breaks the protocol: what is wrong, naming the field. Thrown by the from_json
// conversions and by open_envelope (and by the daemon for what only it can check).
class ProtocolViolation : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The value a decode returns instead of throwing.
struct ProtocolError {
  std::string message;  // "protocol: bad JSON", "protocol: version 2, expected 1", ...
};

// Text a peer sent, or made from what it sent, cut to at most `max_bytes` bytes (on a UTF-8
// character boundary, "..." included) so that echoing it back stays small.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

// Field readers for from_json: read field `name` of the object `j` into `out`, checking its JSON
// type by out's C++ type (a string, a non-negative integer for unsigned types, an integer, a
// number, a boolean, an array of strings, an object of name -> non-negative integer, an array of
// objects, or an object for a struct with from_json). `expected` replaces the type's description
// in the message ("an array of key lines"). Throw ProtocolViolation: "protocol: field 'keys' is
// missing", "protocol: field 'keys' must be an array of strings".
namespace field {

[[noreturn]] void fail(std::string message);
[[noreturn]] void mistyped(std::string_view name, std::string_view expected);

template <class T>
struct Wire;  // what T is on the wire: describe() names it for messages; read() is false when v is not

template <>
struct Wire<std::string> {
  static constexpr std::string_view describe() { return "a string"; }
  static bool read(const nlohmann::json& v, std::string& out) {
    if (!v.is_string()) return false;
    out = v.get_ref<const std::string&>();
    return true;
  }
};
template <class T>
  requires(std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
struct Wire<T> {
  static constexpr std::string_view describe() { return "a non-negative integer"; }
  static bool read(const nlohmann::json& v, T& out) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<T>::max()) return false;
    out = v.get<T>();
    return true;
  }
};
template <>
struct Wire<std::int64_t> {
  static constexpr std::string_view describe() { return "an integer"; }
  static bool read(const nlohmann::json& v, std::int64_t& out) {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > kMax)) return false;
    out = v.get<std::int64_t>();
    return true;
  }
};
template <>
struct Wire<double> {
  static constexpr std::string_view describe() { return "a number"; }
  static bool read(const nlohmann::json& v, double& out) {
    if (!v.is_number()) return false;
    out = v.get<double>();
    return true;
  }
};
template <>
struct Wire<bool> {
  static constexpr std::string_view describe() { return "a boolean"; }
  static bool read(const nlohmann::json& v, bool& out) {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
    return true;
  }
};
template <>
struct Wire<std::vector<std::string>> {
  static constexpr std::string_view describe() { return "an array of strings"; }
  static bool read(const nlohmann::json& v, std::vector<std::string>& out) {
    if (!v.is_array()) return false;
    out.clear();
    out.reserve(v.size());
    for (const auto& e : v) {
      if (!e.is_string()) return false;
      out.push_back(e.get_ref<const std::string&>());
    }
    return true;
  }
};
template <class Less>
struct Wire<std::map<std::string, std::uint64_t, Less>> {
  static constexpr std::string_view describe() { return "an object of name -> non-negative integer"; }
  static bool read(const nlohmann::json& v, std::map<std::string, std::uint64_t, Less>& out) {
    if (!v.is_object()) return false;
    out.clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it.value().is_number_unsigned()) return false;
      out.emplace(it.key(), it.value().template get<std::uint64_t>());
    }
    return true;
  }
};
// A struct with from_json: an object, whose own fields name themselves when wrong.
template <class T>
  requires std::is_class_v<T>
struct Wire<T> {
  static constexpr std::string_view describe() { return "an object"; }
  static bool read(const nlohmann::json& v, T& out) {
    if (!v.is_object()) return false;
    from_json(v, out);
    return true;
  }
};
template <class T>
  requires std::is_class_v<T>
struct Wire<std::vector<T>> {
  static constexpr std::string_view describe() { return "an array of objects"; }
  static bool read(const nlohmann::json& v, std::vector<T>& out) {
    if (!v.is_array()) return false;
    out.clear();
    out.reserve(v.size());
    for (const auto& e : v) {
      if (!e.is_object()) return false;
      from_json(e, out.emplace_back());
    }
    return true;
  }
};

template <class T>
void read(const nlohmann::json& v, std::string_view name, T& out, std::string_view expected = {}) {
  if (!Wire<T>::read(v, out)) mistyped(name, expected.empty() ? Wire<T>::describe() : expected);
}

template <class T>
void required(const nlohmann::json& j, const char* name, T& out, std::string_view expected = {}) {
  const auto it = j.find(name);
  if (it == j.end()) fail(std::string("protocol: field '") + name + "' is missing");
  read(*it, name, out, expected);
}

// Absent: `out` keeps its value (the field's default).
template <class T>
void optional(const nlohmann::json& j, const char* name, T& out, std::string_view expected = {}) {
  if (const auto it = j.find(name); it != j.end()) read(*it, name, out, expected);
}
template <class T>
void optional(const nlohmann::json& j, const char* name, std::optional<T>& out,
              std::string_view expected = {}) {
  if (const auto it = j.find(name); it != j.end()) read(*it, name, out.emplace(), expected);
}

// Writes `value` under `name` only when it is set.
template <class T>
void put_optional(nlohmann::json& j, const char* name, const std::optional<T>& value) {
  if (value) j[name] = *value;
}

}  // namespace field

// A payload opened: its object and its type, with "v" checked. Throws ProtocolViolation: bad JSON,
// not an object, no or another version, no type.
struct Envelope {
  nlohmann::json body;
  std::string type;
};
Envelope open_envelope(std::string_view payload);

// The JSON payload of message `m` ({"v":1,"type":M::kType, ...fields}), never throwing for text
// a peer sent.
std::string dump_payload(const nlohmann::json& object);
template <class M>
nlohmann::json to_object(const M& m) {
  nlohmann::json j = m;
  j["v"] = kProtocolVersion;
  j["type"] = M::kType;
  return j;
}
template <class M>
std::string to_payload(const M& m) {
  return dump_payload(to_object(m));
}
// A complete frame of `m`. Throws kd::Error as encode_frame does when the payload is longer than a
// frame (a sender of unbounded data checks fits_in_frame on to_payload first).
std::string frame_of_payload(std::string_view payload);
template <class M>
std::string encode(const M& m) {
  return frame_of_payload(to_payload(m));
}

// The payload decoded as one of `Ms` (by its type; the first of Ms whose kType matches), or why
// it is not. Never throws.
template <class... Ms>
std::variant<std::variant<Ms...>, ProtocolError> decode_one_of(std::string_view payload) noexcept {
  using Result = std::variant<std::variant<Ms...>, ProtocolError>;
  try {
    Envelope e = open_envelope(payload);
    std::optional<std::variant<Ms...>> out;
    const auto try_one = [&]<class M>(M*) {
      if (out || e.type != M::kType) return;
      out.emplace(std::in_place_type<M>, e.body.template get<M>());
    };
    (try_one(static_cast<Ms*>(nullptr)), ...);
    if (!out) return Result(ProtocolError{"protocol: unknown message type '" + e.type + "'"});
    return Result(std::move(*out));
  } catch (const ProtocolViolation& err) {
    return Result(ProtocolError{err.what()});
  } catch (const std::exception& err) {
    return Result(ProtocolError{std::string("protocol: ") + err.what()});
  }
}
template <class M>
std::variant<M, ProtocolError> decode_as(std::string_view payload) noexcept {
  auto r = decode_one_of<M>(payload);
  if (auto* err = std::get_if<ProtocolError>(&r)) return std::move(*err);
  return std::get<0>(std::move(std::get<0>(r)));
}

}  // namespace kd::protocol
