// Whether a builtin family configuration can serve a whole range of n (issue 29), and the candidate
// that does: one source and one range plan.
//
// Builtin kernels read m, n and k from kd_gemm_args at run time; what a family derives from n is
// the launch plan (grids, workspace) and, in some families, parameters (skinny's KD_NT, a column
// tile count). So a configuration serves [LO, HI] exactly when, for every n in it, the family
// rejects nothing, completes the parameters to themselves (none of them depends on n) and finds
// them valid: the source it renders is then byte for byte the same for every n. Its exact plans
// must also fit one range plan (range/plan_fit.hpp). Checked at every n of the range, on the CPU.
#pragma once

#include <string>
#include <variant>

#include "builtin/family.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"

namespace kd::search::range {

// Ranges wider than this are not checked value by value (and not searched): split them.
inline constexpr std::int64_t kMaxRangeValues = std::int64_t{1} << 16;

struct RangeCandidate {
  std::string source;  // the family's source with the range key and the range plan in its header
  LaunchPlan plan;     // the range plan (rules for the n-dependent extents)
};

// `range_key` must be a range (GemmKey::is_range); `params` are completed for its last n first.
// The candidate, or why the configuration cannot serve the range ("n=70: the parameters depend on
// n (KD_NT 9 -> 10)", "launch 0 grid[1]: ...").
std::variant<RangeCandidate, std::string> range_candidate(const builtin::Family& family, const GemmKey& range_key,
                                                          const builtin::Target& target,
                                                          const builtin::Params& params);

// The source `family` renders for `range_key` with `plan` as its kdispatch:plan comment.
std::string range_source(const builtin::Family& family, const GemmKey& range_key, const builtin::Target& target,
                         const builtin::Params& params, const LaunchPlan& plan);

}  // namespace kd::search::range
