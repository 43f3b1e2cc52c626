// From a family's exact plans over a range of n to one range plan (issue 29): the plan a range
// record carries, whose n-dependent grid extents are GridRules (plan/grid_rule.hpp). The rules are
// fitted to the exact plans and then checked against every one of them, so a fitted range plan
// launches, for each n of the range, exactly the grid the family computes for that n.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "plan/launch_plan.hpp"

namespace kd::search::range {

// A grid extent over n = lo, lo + 1, ..., lo + values.size() - 1: a constant (no rule), or the rule
// that reproduces every value. Tried in order: the step form mul * floor((n + offset) / div) + add
// (tile counts, per-column launches), then ceil(n * scale / div) (grid-stride launches over
// n-proportional work), each also under a cap (extents that saturate at a wave of CTAs). A value
// sequence none of them reproduces, or one that decreases, is an error naming why.
struct ExtentFit {
  std::optional<GridRule> rule;  // nullopt: the extent is the same for every n
};
std::variant<ExtentFit, std::string> fit_extent(std::span<const std::int64_t> values, std::int64_t lo);

// The range plan of `plans` (plans[i] is the exact plan for n = lo + i): the same launches (entry,
// block, shared memory, pdl) at every n, each grid extent a constant or a fitted rule, "grid" the
// extents at the last n, and the largest workspace of the range. An error says which launch or
// extent could not be carried.
std::variant<LaunchPlan, std::string> fit_range_plan(const std::vector<LaunchPlan>& plans, std::int64_t lo);

}  // namespace kd::search::range
