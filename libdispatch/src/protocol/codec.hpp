// The daemon protocol's one codec: every message is a struct (messages.hpp: what libkdispatch
// speaks; requests.hpp: the operator's requests and their replies; status.hpp: the status and stats
// replies) with nlohmann's typed conversions, to_json and from_json, found by argument-dependent
// lookup (`json j = message;`, `j.get<Miss>()`). The daemon, kdctl's client and libkdispatch's
// client encode and decode only through them. A struct declares its wire fields once, in its
// `fields` (field::Writer and field::Reader below), and both conversions are made from that list;
// only the two whose shape is not a list of fields (Miss: one key or a batch; RemoteCounts: named
// counts beside two maps) write theirs out.
//
// Every payload is a JSON object with "v": kProtocolVersion and "type": the struct's kType. A
// from_json checks each field's JSON type and the bounds of PROTOCOL.md and throws
// ProtocolViolation naming the field ("protocol: field 'pid' must be a non-negative integer");
// unknown fields are ignored (forward compatibility). Encoding never throws for text a peer sent:
// invalid UTF-8 is replaced (U+FFFD).
#pragma once

#include <algorithm>
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

// Field readers: read field `name` of the object `j` into `out`, checking its JSON type by out's
// C++ type (a string, a non-negative integer for unsigned types, an integer, a number, a boolean,
// an array or an object of those, an object for a struct with from_json). `expected` replaces the
// type's description in the message ("an array of key lines"). Throw ProtocolViolation:
// "protocol: field 'keys' is missing", "protocol: field 'keys' must be an array of strings".
namespace field {

[[noreturn]] void fail(std::string message);
[[noreturn]] void mistyped(std::string_view name, std::string_view expected);

// The scalars: whether a JSON value holds one, and what one is called, for messages.
template <class T>
struct Scalar;
template <>
struct Scalar<std::string> {
  static constexpr std::string_view kNoun = "string";
  static bool holds(const nlohmann::json& v) { return v.is_string(); }
};
template <>
struct Scalar<bool> {
  static constexpr std::string_view kNoun = "boolean";
  static bool holds(const nlohmann::json& v) { return v.is_boolean(); }
};
template <>
struct Scalar<double> {
  static constexpr std::string_view kNoun = "number";
  static bool holds(const nlohmann::json& v) { return v.is_number(); }
};
template <>
struct Scalar<std::int64_t> {
  static constexpr std::string_view kNoun = "integer";
  static bool holds(const nlohmann::json& v) {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return v.is_number_integer() && (!v.is_number_unsigned() || v.get<std::uint64_t>() <= kMax);
  }
};
template <class T>
  requires(std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
struct Scalar<T> {
  static constexpr std::string_view kNoun = "non-negative integer";
  static bool holds(const nlohmann::json& v) {
    return v.is_number_unsigned() && v.get<std::uint64_t>() <= std::numeric_limits<T>::max();
  }
};
template <class T>
concept IsScalar = requires(const nlohmann::json& v) { Scalar<T>::holds(v); };

std::string with_article(std::string_view noun);  // "a string", "an integer"

// For a signed member that the wire allows only non-negative: the description to read it with, and
// the check after (throws "protocol: field 'pid' must be a non-negative integer").
inline constexpr std::string_view kNonNegativeInteger = "a non-negative integer";
void non_negative(std::string_view name, std::int64_t value);

// A name a peer sent is cut to this many bytes when a message quotes it.
inline constexpr std::size_t kMaxNameInMessageBytes = 64;

// Whether `v` holds a T (before anything is converted), and what a T is called.
template <class T>
struct Shape {
  static bool holds(const nlohmann::json& v) {
    if constexpr (IsScalar<T>) return Scalar<T>::holds(v);
    else return v.is_object();  // a struct: its own fields name themselves when wrong
  }
  static std::string noun() {
    if constexpr (IsScalar<T>) return std::string(Scalar<T>::kNoun);
    else return "object";
  }
  static std::string culprit(const nlohmann::json&) { return {}; }
};
template <class T>
struct Shape<std::vector<T>> {
  static bool holds(const nlohmann::json& v) {
    return v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return Shape<T>::holds(e); });
  }
  static std::string noun() { return "array of " + Shape<T>::noun() + "s"; }
  static std::string culprit(const nlohmann::json&) { return {}; }
};
template <class T, class Less>
struct Shape<std::map<std::string, T, Less>> {
  static bool holds(const nlohmann::json& v) {
    return v.is_object() && std::all_of(v.begin(), v.end(), [](const auto& e) { return Shape<T>::holds(e); });
  }
  static std::string noun() { return "object of name -> " + Shape<T>::noun(); }
  // The first entry that is not a T, named: " ('no_entry' is not a non-negative integer)".
  static std::string culprit(const nlohmann::json& v) {
    if (!v.is_object()) return {};
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!Shape<T>::holds(it.value()))
        return " ('" + truncate_utf8(it.key(), kMaxNameInMessageBytes) + "' is not " + with_article(Shape<T>::noun()) + ")";
    return {};
  }
};

template <class T>
void convert(const nlohmann::json& v, T& out) {
  if constexpr (IsScalar<T>) out = v.get<T>();
  else from_json(v, out);
}
template <class T>
void convert(const nlohmann::json& v, std::vector<T>& out) {
  out.clear();
  out.reserve(v.size());
  for (const auto& e : v) convert(e, out.emplace_back());
}
template <class T, class Less>
void convert(const nlohmann::json& v, std::map<std::string, T, Less>& out) {
  out.clear();
  for (auto it = v.begin(); it != v.end(); ++it) convert(it.value(), out[it.key()]);
}

template <class T>
void read(const nlohmann::json& v, std::string_view name, T& out, std::string_view expected = {}) {
  if (!Shape<T>::holds(v))
    mistyped(name, (expected.empty() ? with_article(Shape<T>::noun()) : std::string(expected)) + Shape<T>::culprit(v));
  convert(v, out);
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

// A struct lists its wire fields once, in `template <class V, class Self> static void fields(V& v,
// Self& m)`, for both directions:
//   v.required("key", m.key);       written always; a payload without it is refused
//   v.defaulted("daemon", m.daemon); written always; absent: the member keeps its default
//   v.optional("evicted", m.evicted); written only when set (a std::optional) or not the default
//   v.merged(m.counters);           the fields of a member struct, beside the others
// and may check what its fields cannot say alone in `static void check(const Self&)` (throws
// ProtocolViolation). Such a struct needs no conversions of its own (to_json/from_json below).
struct Writer {
  nlohmann::json& j;
  template <class T>
  void required(const char* name, const T& value, std::string_view = {}) {
    j[name] = value;
  }
  template <class T>
  void defaulted(const char* name, const T& value, std::string_view = {}) {
    j[name] = value;
  }
  template <class T>
  void optional(const char* name, const T& value, std::string_view = {}) {
    if (!(value == T{})) j[name] = value;
  }
  template <class T>
  void optional(const char* name, const std::optional<T>& value, std::string_view = {}) {
    if (value) j[name] = *value;
  }
  template <class T>
  void merged(const T& value) {
    T::fields(*this, value);
  }
};
struct Reader {
  const nlohmann::json& j;
  template <class T>
  void required(const char* name, T& value, std::string_view expected = {}) {
    field::required(j, name, value, expected);
  }
  template <class T>
  void defaulted(const char* name, T& value, std::string_view expected = {}) {
    field::optional(j, name, value, expected);
  }
  template <class T>
  void optional(const char* name, T& value, std::string_view expected = {}) {
    field::optional(j, name, value, expected);
  }
  template <class T>
  void merged(T& value) {
    T::fields(*this, value);
  }
};

}  // namespace field

template <class M>
concept ListsFields = requires(field::Reader& r, M& m) { M::fields(r, m); };
template <ListsFields M>
void to_json(nlohmann::json& j, const M& m) {
  j = nlohmann::json::object();
  field::Writer w{j};
  M::fields(w, m);
}
template <ListsFields M>
void from_json(const nlohmann::json& j, M& m) {
  field::Reader r{j};
  M::fields(r, m);
  if constexpr (requires { M::check(m); }) M::check(m);
}

// A struct without fields on the wire (subscribe, stats, zero_stats, shutdown; an empty `ok`).
struct NoFields {
  template <class V, class Self>
  static void fields(V&, Self&) {}
  bool operator==(const NoFields&) const = default;
};

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
