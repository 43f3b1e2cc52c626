#include "range/plan_fit.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kd::search::range {
namespace {

__extension__ typedef __int128 Wide;  // GCC and Clang: exact products of 64-bit values

bool reproduces(const GridRule& rule, std::span<const std::int64_t> values, std::int64_t lo) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto v = rule.at(lo + static_cast<std::int64_t>(i));
    if (!v || *v != values[i]) return false;
  }
  return true;
}

// mul * floor((n + offset) / div) + add from the points where the values step up: equal steps
// (mul) at equal distances (div). One step fixes no distance: any div that puts no other step in
// the range will do.
std::optional<GridRule> step_form(std::span<const std::int64_t> values, std::int64_t lo) {
  std::vector<std::int64_t> steps;  // the n at which the value goes up
  std::int64_t mul = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (values[i] == values[i - 1]) continue;
    const std::int64_t delta = values[i] - values[i - 1];
    if (mul != 0 && delta != mul) return std::nullopt;
    mul = delta;
    steps.push_back(lo + static_cast<std::int64_t>(i));
  }
  if (steps.empty() || mul <= 0) return std::nullopt;
  const std::int64_t hi = lo + static_cast<std::int64_t>(values.size()) - 1;
  std::int64_t div = 0;
  if (steps.size() == 1) {
    div = std::max({steps[0] - lo, hi - steps[0] + 1, std::int64_t{1}});
  } else {
    div = steps[1] - steps[0];
    for (std::size_t j = 2; j < steps.size(); ++j)
      if (steps[j] - steps[j - 1] != div) return std::nullopt;
  }
  GridRule r;
  r.div = static_cast<std::uint64_t>(div);
  r.offset = static_cast<std::uint64_t>((div - steps[0] % div) % div);
  r.mul = static_cast<std::uint64_t>(mul);
  const Wide base = static_cast<Wide>(mul) * ((lo + static_cast<Wide>(r.offset)) / div);
  const Wide add = values[0] - base;
  if (add < INT64_MIN || add > INT64_MAX) return std::nullopt;
  r.add = static_cast<std::int64_t>(add);
  return reproduces(r, values, lo) ? std::optional(r) : std::nullopt;
}

// ceil(n * scale / div): the simplest fraction scale / div with (v - 1) / n < scale / div <= v / n
// for every n (denominators up to 2^16, enough for a grid-stride launch over n * 1024 elements).
std::optional<GridRule> ceil_form(std::span<const std::int64_t> values, std::int64_t lo) {
  // lower = max (v - 1) / n (strict), upper = min v / n, as fractions.
  Wide lower_num = -1, lower_den = 1, upper_num = values[0], upper_den = lo;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Wide n = lo + static_cast<Wide>(i), v = values[i];
    if (v < 1) return std::nullopt;
    if ((v - 1) * lower_den > lower_num * n) {
      lower_num = v - 1;
      lower_den = n;
    }
    if (v * upper_den < upper_num * n) {
      upper_num = v;
      upper_den = n;
    }
  }
  constexpr std::int64_t kMaxDiv = std::int64_t{1} << 16;
  for (std::int64_t div = 1; div <= kMaxDiv; ++div) {
    // The least scale with scale / div > lower.
    const Wide scale = lower_num < 0 ? 1 : lower_num * div / lower_den + 1;
    if (scale < 1 || scale * upper_den > upper_num * div) continue;
    GridRule r;
    r.scale = static_cast<std::uint64_t>(scale);
    r.div = static_cast<std::uint64_t>(div);
    r.offset = static_cast<std::uint64_t>(div - 1);
    if (reproduces(r, values, lo)) return r;
  }
  return std::nullopt;
}

std::optional<GridRule> uncapped(std::span<const std::int64_t> values, std::int64_t lo) {
  if (auto r = step_form(values, lo)) return r;
  return ceil_form(values, lo);
}

}  // namespace

std::variant<ExtentFit, std::string> fit_extent(std::span<const std::int64_t> values, std::int64_t lo) {
  if (values.empty()) return std::string("no values");
  if (std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == values[0]; })) return ExtentFit{};
  for (std::size_t i = 1; i < values.size(); ++i)
    if (values[i] < values[i - 1])
      return fmt::format("it decreases from {} at n={} to {} at n={}", values[i - 1], lo + static_cast<std::int64_t>(i) - 1,
                         values[i], lo + static_cast<std::int64_t>(i));
  if (auto r = uncapped(values, lo)) return ExtentFit{r};
  // A cap: the values end on a plateau; fit what comes before it, then cap it there.
  const std::int64_t top = values.back();
  const auto first_top = static_cast<std::size_t>(std::find(values.begin(), values.end(), top) - values.begin());
  if (first_top >= 2) {
    for (std::size_t end : {first_top + 1, first_top}) {
      if (auto r = uncapped(values.subspan(0, end), lo)) {
        r->cap = static_cast<std::uint64_t>(top);
        if (reproduces(*r, values, lo)) return ExtentFit{r};
      }
    }
  }
  return fmt::format("it follows no rule a record can carry (values {} at n={} to {} at n={})", values.front(), lo,
                     values.back(), lo + static_cast<std::int64_t>(values.size()) - 1);
}

std::variant<LaunchPlan, std::string> fit_range_plan(const std::vector<LaunchPlan>& plans, std::int64_t lo) {
  if (plans.empty()) return std::string("no plans");
  const LaunchPlan& last = plans.back();
  LaunchPlan out = last;
  for (const LaunchPlan& p : plans) {
    out.workspace_bytes = std::max(out.workspace_bytes, p.workspace_bytes);
    if (p.launches.size() != last.launches.size())
      return fmt::format("the number of launches changes with n ({} and {})", p.launches.size(), last.launches.size());
    for (std::size_t i = 0; i < p.launches.size(); ++i) {
      const LaunchSpec &a = p.launches[i], &b = last.launches[i];
      if (a.entry != b.entry || a.block != b.block || a.smem_bytes != b.smem_bytes || a.pdl != b.pdl || a.has_rule())
        return fmt::format("launch {} changes with n other than in its grid", i);
    }
  }
  std::vector<std::int64_t> values(plans.size());
  for (std::size_t i = 0; i < last.launches.size(); ++i) {
    for (std::size_t d = 0; d < 3; ++d) {
      for (std::size_t j = 0; j < plans.size(); ++j) values[j] = plans[j].launches[i].grid[d];
      auto fit = fit_extent(values, lo);
      if (const auto* why = std::get_if<std::string>(&fit))
        return fmt::format("launch {} ({}) grid[{}]: {}", i, last.launches[i].entry, d, *why);
      out.launches[i].grid_rule[d] = std::get<ExtentFit>(fit).rule;
    }
  }
  return out;
}

}  // namespace kd::search::range
