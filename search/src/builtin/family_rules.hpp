// Helpers the families' host rules share: parameter lookup, the generic idea moves (scale or step
// one parameter within bounds) and the split-K reduction launch of the tiled families.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "builtin/family.hpp"

namespace kd::builtin {

// A parameter's value, 0 when absent.
inline long long param(const Params& p, const char* name) {
  const auto it = p.find(name);
  return it == p.end() ? 0 : it->second;
}
inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
inline std::uint32_t u32(long long v) { return static_cast<std::uint32_t>(v); }

// Idea moves: Name times Num / Den, or Name plus Delta, kept within [Lo, Hi]; nullopt at a bound.
template <const char* Name, long long Num, long long Den, long long Lo, long long Hi>
std::optional<Params> scale_param(const GemmKey&, const Target&, const Params& p) {
  const long long v = param(p, Name) * Num / Den;
  if (v < Lo || v > Hi || v == param(p, Name)) return std::nullopt;
  Params out = p;
  out[Name] = v;
  return out;
}
template <const char* Name, long long Delta, long long Lo, long long Hi>
std::optional<Params> step_param(const GemmKey&, const Target&, const Params& p) {
  const long long v = param(p, Name) + Delta;
  if (v < Lo || v > Hi) return std::nullopt;
  Params out = p;
  out[Name] = v;
  return out;
}

// The second launch of a split-K plan: `entry` sums the splits' f32 partials (workspace
// [split][batch][n][m]) grid-stride with 256 threads, at most 8 blocks per SM.
inline LaunchSpec splitk_reduce_launch(const GemmKey& key, const Target& t, std::string entry) {
  constexpr long long kThreads = 256;
  LaunchSpec reduce;
  reduce.entry = std::move(entry);
  const long long outputs = key.batch * key.m * key.n;
  reduce.grid = {u32(std::clamp(ceil_div(outputs, kThreads), 1LL, 8LL * t.sms)), 1, 1};
  reduce.block = {u32(kThreads), 1, 1};
  return reduce;
}

}  // namespace kd::builtin
