#include "plan/grid_rule.hpp"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace kd {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 6> kFields{"scale", "offset", "div", "mul", "add", "cap"};

std::optional<std::uint64_t> unsigned_of(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> GridRule::at(std::int64_t n) const noexcept {
  if (n < 1 || div == 0 || scale == 0) return std::nullopt;
  __extension__ typedef unsigned __int128 Wide;  // GCC and Clang; wide enough for every product below
  constexpr Wide kMax = static_cast<Wide>(INT64_MAX);
  // scale * n < 2^127 and offset < 2^64: the sum fits 128 bits; the product is checked.
  const Wide scaled = static_cast<Wide>(scale) * static_cast<Wide>(n) + offset;
  const Wide steps = scaled / div;
  if (mul != 0 && steps > kMax / mul) return std::nullopt;
  const auto base = static_cast<std::int64_t>(static_cast<Wide>(mul) * steps);
  std::int64_t value = 0;
  if (__builtin_add_overflow(base, add, &value)) return std::nullopt;
  if (cap != 0 && value > 0 && static_cast<std::uint64_t>(value) > cap) {
    if (cap > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    value = static_cast<std::int64_t>(cap);
  }
  return value;
}

json grid_rule_json(const GridRule& r) {
  json out = json::object();
  out["div"] = r.div;
  if (r.scale != 1) out["scale"] = r.scale;
  if (r.offset != 0) out["offset"] = r.offset;
  if (r.mul != 1) out["mul"] = r.mul;
  if (r.add != 0) out["add"] = r.add;
  if (r.cap != 0) out["cap"] = r.cap;
  return out;
}

std::variant<GridRule, std::string> grid_rule_from_json(const json& v) {
  if (!v.is_object()) return fmt::format("expected an object, got {}", v.dump());
  for (const auto& [name, value] : v.items()) {
    bool known = false;
    for (const auto f : kFields) known = known || name == f;
    if (!known) return fmt::format("unknown field \"{}\"", name);
  }
  GridRule r;
  const auto take = [&](const char* name, std::uint64_t& into, std::uint64_t minimum) -> std::optional<std::string> {
    const auto it = v.find(name);
    if (it == v.end()) return std::nullopt;
    const auto value = unsigned_of(*it);
    if (!value || *value < minimum) return fmt::format("{}: expected an integer >= {}, got {}", name, minimum, it->dump());
    into = *value;
    return std::nullopt;
  };
  if (!v.contains("div")) return std::string("div: missing");
  for (const auto& problem : {take("div", r.div, 1), take("scale", r.scale, 1), take("offset", r.offset, 0),
                              take("mul", r.mul, 0), take("cap", r.cap, 0)}) {
    if (problem) return *problem;
  }
  if (const auto it = v.find("add"); it != v.end()) {
    if (!it->is_number_integer()) return fmt::format("add: expected an integer, got {}", it->dump());
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      return fmt::format("add: {} is too large", it->dump());
    r.add = it->get<std::int64_t>();
  }
  return r;
}

}  // namespace kd
