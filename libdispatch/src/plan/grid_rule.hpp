// The rule a range record (issue 29: a record that serves every n in [LO, HI]) carries for a grid
// extent that depends on the call's n. It is data, checked like the plan is, never code:
//
//   v(n) = min(cap, mul * floor((scale * n + offset) / div) + add)        (cap 0: no cap)
//
// so `ceil_div(n, 128)` is {div 128, offset 127}, and a grid-stride reduction's
// `clamp(ceil(batch*m*n / 256), 1, 8 * sms)` is {scale batch*m, offset 255, div 256, cap 8*sms}.
// scale, div >= 1 and mul, offset >= 0 make v non-decreasing in n: over a range it is least at LO
// and largest at HI, which is what checking a range at its ends relies on.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace kd {

struct GridRule {
  std::uint64_t scale = 1;
  std::uint64_t offset = 0;
  std::uint64_t div = 1;
  std::uint64_t mul = 1;
  std::int64_t add = 0;
  std::uint64_t cap = 0;  // 0: none
  bool operator==(const GridRule&) const = default;

  // v(n) for n >= 1; nullopt when an intermediate value leaves int64 (a rule no range can use).
  std::optional<std::int64_t> at(std::int64_t n) const noexcept;
};

// The JSON form: an object with "div" and whichever of "scale", "offset", "mul", "add", "cap"
// differ from their defaults (1, 0, 1, 0, 0). Deterministic (keys sorted).
nlohmann::json grid_rule_json(const GridRule& rule);
// Parses that form; every field a JSON integer (add may be negative), div and scale >= 1, no
// other field. Returns the rule or a message naming the field.
std::variant<GridRule, std::string> grid_rule_from_json(const nlohmann::json& value);

}  // namespace kd
