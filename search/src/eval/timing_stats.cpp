#include "eval/timing_stats.hpp"

#include <algorithm>
#include <cmath>

namespace kd::eval {
namespace {

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

TimeStats summarize(std::vector<double> samples_us) {
  TimeStats t;
  if (samples_us.empty()) return t;
  std::sort(samples_us.begin(), samples_us.end());
  t.median_us = quantile(samples_us, 0.5);
  t.p25_us = quantile(samples_us, 0.25);
  t.p75_us = quantile(samples_us, 0.75);
  t.samples = static_cast<int>(samples_us.size());
  return t;
}

BaselineComparison compare_with_baseline(const TimeStats& candidate, const TimeStats& baseline,
                                         double margin) {
  const double gain = baseline.median_us - candidate.median_us;
  const double required =
      margin * baseline.median_us + 0.5 * (candidate.spread_us() + baseline.spread_us());
  return gain > required ? BaselineComparison::faster : BaselineComparison::not_faster;
}

}  // namespace kd::eval
