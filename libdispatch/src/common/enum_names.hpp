// The spelling of an enum's values as one table, shared by whatever prints and parses them so the
// two cannot disagree: `constexpr std::array<Named<E>, N> kNames{{{E::a, "a"}, ...}};`.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace kd {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

// The name of the row that holds `value`; `missing` where no row does.
template <class E, std::size_t N>
constexpr std::string_view name_in(const std::array<Named<E>, N>& table, E value,
                                   std::string_view missing = "unknown") {
  for (const auto& row : table) {
    if (row.value == value) return row.name;
  }
  return missing;
}

// The value of the row spelled `name`; nullopt where no row is.
template <class E, std::size_t N>
constexpr std::optional<E> value_of(const std::array<Named<E>, N>& table, std::string_view name) {
  for (const auto& row : table) {
    if (row.name == name) return row.value;
  }
  return std::nullopt;
}

}  // namespace kd
