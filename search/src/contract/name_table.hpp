// An enum's names (for logs, metrics and configuration files) as one table of (value, name) rows:
// the name of a value and the value of a name read the same rows, so they cannot disagree.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace kd::search {

template <class Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

// The name of `value`; "unknown" for a value the table does not hold (a corrupt or newer value).
template <class Enum, std::size_t N>
constexpr std::string_view name_in(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [known, name] : table) {
    if (known == value) return name;
  }
  return "unknown";
}

// The value named `name`, nullopt for a name the table does not hold.
template <class Enum, std::size_t N>
constexpr std::optional<Enum> value_in(const NameTable<Enum, N>& table, std::string_view name) {
  for (const auto& [value, known] : table) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace kd::search
