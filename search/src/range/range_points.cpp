#include "range/range_points.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace kd::search::range {
namespace {

// The n > lo where rule `r` steps up, within [lo, hi]: first, middle and last.
std::vector<std::int64_t> steps_of(const GridRule& r, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> all;
  std::optional<std::int64_t> before = r.at(lo);
  // Rules are monotone: bisect for each next step instead of walking every n.
  std::int64_t from = lo;
  while (all.size() < 4096 && from < hi && before) {
    std::int64_t a = from + 1, b = hi + 1;  // the first n in [a, b) whose value exceeds `before`
    while (a < b) {
      const std::int64_t mid = a + (b - a) / 2;
      const auto v = r.at(mid);
      if (v && *v > *before) b = mid;
      else a = mid + 1;
    }
    if (a > hi) break;
    all.push_back(a);
    before = r.at(a);
    from = a;
  }
  if (all.size() <= 3) return all;
  return {all.front(), all[all.size() / 2], all.back()};
}

// An odd n near `n`, within [lo, hi] (n itself, clamped, when the range holds no odd value near it).
std::int64_t ragged_near(std::int64_t n, std::int64_t lo, std::int64_t hi) {
  for (const std::int64_t d : {0, 1, -1, 2, -2, 3, -3}) {
    const std::int64_t c = n + d;
    if (c >= lo && c <= hi && c % 2 == 1) return c;
  }
  return std::clamp(n, lo, hi);
}

}  // namespace

RangePoints range_points(std::int64_t lo, std::int64_t hi, const LaunchPlan& plan) {
  RangePoints out;
  std::set<std::int64_t> timed{lo, hi};
  const auto mid = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
  timed.insert(std::clamp(mid, lo, hi));
  out.timed.assign(timed.begin(), timed.end());

  // In priority order; the set keeps the first kMaxChecked distinct ones.
  std::vector<std::int64_t> wanted(out.timed.begin(), out.timed.end());
  wanted.push_back(ragged_near(lo + 1, lo, hi));
  wanted.push_back(ragged_near(lo + (hi - lo) / 3, lo, hi));
  wanted.push_back(ragged_near(hi - 1, lo, hi));
  for (const LaunchSpec& l : plan.launches) {
    for (const auto& rule : l.grid_rule) {
      if (!rule) continue;
      for (const std::int64_t step : steps_of(*rule, lo, hi)) {
        wanted.push_back(step - 1);
        wanted.push_back(step);
      }
    }
  }
  std::set<std::int64_t> checked;
  for (const std::int64_t n : wanted) {
    if (checked.size() >= kMaxChecked) break;
    if (n >= lo && n <= hi) checked.insert(n);
  }
  out.checked.assign(checked.begin(), checked.end());
  return out;
}

}  // namespace kd::search::range
