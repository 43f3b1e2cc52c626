#include "protocol/codec.hpp"

#include <algorithm>

#include "protocol/frame.hpp"

namespace kd::protocol {

using nlohmann::json;

namespace field {

void fail(std::string message) { throw ProtocolViolation(std::move(message)); }

void mistyped(std::string_view name, std::string_view expected) {
  fail("protocol: field '" + std::string(name) + "' must be " + std::string(expected));
}

void non_negative(std::string_view name, std::int64_t value) {
  if (value < 0) mistyped(name, kNonNegativeInteger);
}

std::string with_article(std::string_view noun) {
  const bool vowel = !noun.empty() && std::string_view("aeiou").find(noun.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(noun);
}

}  // namespace field

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  std::size_t cut = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Back up over continuation bytes (10xxxxxx) so that a multi-byte character is not split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kEllipsis.substr(0, std::min(kEllipsis.size(), max_bytes)));
}

Envelope open_envelope(std::string_view payload) {
  Envelope e;
  e.body = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (e.body.is_discarded()) field::fail("protocol: bad JSON");
  if (!e.body.is_object()) field::fail("protocol: payload is not a JSON object");
  const auto v = e.body.find("v");
  if (v == e.body.end() || !v->is_number_integer()) field::fail("protocol: missing version field 'v'");
  if (!v->is_number_unsigned() || v->get<std::uint64_t>() != kProtocolVersion)
    field::fail("protocol: version " + v->dump() + ", expected " + std::to_string(kProtocolVersion));
  field::required(e.body, "type", e.type);
  return e;
}

std::string dump_payload(const json& object) { return object.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string frame_of_payload(std::string_view payload) { return encode_frame(payload); }

}  // namespace kd::protocol
