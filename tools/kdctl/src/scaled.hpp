// Numbers with a unit letter on the command line: durations (30d) and sizes (500M).
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kd::kdctl {

struct Suffix {
  char letter;
  std::uint64_t factor;
};
inline constexpr std::array<Suffix, 5> kDurationSuffixes{{{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}}};
inline constexpr std::array<Suffix, 4> kSizeSuffixes{{{'K', 1ull << 10}, {'M', 1ull << 20}, {'G', 1ull << 30},
                                                      {'T', 1ull << 40}}};

// "<digits><suffix>" (the suffix optional when `bare_allowed`, meaning factor 1); nullopt for
// anything else or an overflow.
template <std::size_t N>
std::optional<std::uint64_t> parse_scaled(std::string_view text, const std::array<Suffix, N>& suffixes,
                                          bool bare_allowed) {
  std::uint64_t factor = 1;
  if (!text.empty() && (text.back() < '0' || text.back() > '9')) {
    const auto it = std::find_if(suffixes.begin(), suffixes.end(),
                                 [&](const Suffix& s) { return s.letter == text.back(); });
    if (it == suffixes.end()) return std::nullopt;
    factor = it->factor;
    text.remove_suffix(1);
  } else if (!bare_allowed) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (value > UINT64_MAX / factor) return std::nullopt;
  return value * factor;
}

}  // namespace kd::kdctl
