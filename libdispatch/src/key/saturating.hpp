// Saturating int64 arithmetic for the roofline numbers (min_bytes): keys may hold dimensions whose
// products overflow, and a byte count pinned at INT64_MAX still orders and compares sensibly.
// Internal to key/.
#pragma once

#include <cstdint>
#include <limits>

namespace kd::saturating {

constexpr std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}
constexpr std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

}  // namespace kd::saturating
