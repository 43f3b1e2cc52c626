// The launch plan: a comment in a candidate's source that starts with `kdispatch:plan` followed by
// JSON, e.g.
//   // kdispatch:plan {"launches":[{"entry":"kd_main","grid":[128,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
// Launches run in order on the caller's stream; grids are integers for the exact keyed shape.
// A launch may carry "pdl":true: it is launched as a programmatic dependent of the launch before it
// on the stream (sm_90+), so it may start while that one finishes. After the first, its kernel must
// execute `griddepcontrol.wait` before it reads anything the earlier launches wrote; on the first
// launch the kernel before it is the application's, so the kernel must execute the wait before any
// global memory access at all (ARCHITECTURE.md, "A plan's first launch may overlap").
// A plan for a range of n (issue 29) may carry "grid_rule": [r0, r1, r2], each null or a GridRule
// (plan/grid_rule.hpp) that computes that grid extent from the call's n; "grid" then holds the
// extents at the range's last n, and workspace and smem are the range's largest.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <optional>
#include <vector>

#include "plan/grid_rule.hpp"

namespace kd {

struct LaunchSpec {
  std::string entry;                    // extern "C" __global__ name
  std::array<std::uint32_t, 3> grid{};  // each >= 1
  std::array<std::uint32_t, 3> block{}; // each >= 1, product <= 1024
  std::uint32_t smem_bytes = 0;         // dynamic shared memory; loaders opt in to it whenever > 0
  bool pdl = false;                     // programmatic dependent of the launch before it on the stream
  // Per grid dimension, the rule that computes it from n (range plans only); grid[d] is then its
  // value at the range's last n.
  std::array<std::optional<GridRule>, 3> grid_rule{};
  bool operator==(const LaunchSpec&) const = default;
  bool has_rule() const noexcept { return grid_rule[0] || grid_rule[1] || grid_rule[2]; }
};

struct LaunchPlan {
  std::vector<LaunchSpec> launches;   // 1..8
  std::uint64_t workspace_bytes = 0;  // device workspace handed in kd_gemm_args.workspace
  bool operator==(const LaunchPlan&) const = default;
  bool has_rules() const noexcept;
};

struct PlanError {
  std::string message;  // names what is wrong: "plan: launches[0].grid: expected 3 integers >= 1"
};

// Finds the single `kdispatch:plan` comment in `source` and parses it. Errors: no plan, two plans,
// JSON that does not parse, missing or mistyped fields, out-of-range values (block product > 1024,
// smem > 227 KiB, zero dimensions, more than 8 launches, workspace > 4 GiB, "pdl" that is not a
// bool).
std::variant<LaunchPlan, PlanError> parse_plan_from_source(std::string_view source);
std::variant<LaunchPlan, PlanError> parse_plan_json(std::string_view json);
std::string plan_to_json(const LaunchPlan& plan);

// Why `plan` cannot serve every n in [lo, hi] (lo <= hi), or nullopt: each rule's value must be
// at least 1 at lo, within CUDA's grid limit and equal to the plan's grid at hi, and computable
// (no overflow) there. A plan without rules serves any n (a persistent kernel). O(rules): the
// rules never decrease with n, so the ends bound every value between them.
std::optional<std::string> range_plan_problem(const LaunchPlan& plan, std::int64_t lo, std::int64_t hi);
// `plan` with every ruled extent computed for `n` and the rules dropped (what a launcher runs).
// Requires range_plan_problem(plan, lo, hi) to be nullopt for a range holding n; an extent a rule
// cannot compute (overflow) or out of CUDA's limits is a PlanError.
std::variant<LaunchPlan, PlanError> plan_at_n(const LaunchPlan& plan, std::int64_t n);

}  // namespace kd
