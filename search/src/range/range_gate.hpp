// The range gate for one compiled kernel (issue 29): the full validation gate at every point
// range_points() checks, each an exact key with the grid the range plan's rules give its n, timed
// against the vendor library at the timed points. The range search holds its contenders to it;
// kdctl validate and kdctl bench run it on a user's kernel and on a stored range record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/evaluator.hpp"
#include "eval/verdict.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"
#include "range/range_points.hpp"

namespace kd::search {
class EvalBackend;
}

namespace kd::search::range {

// One point of the range gate.
struct PointResult {
  std::int64_t n = 0;
  bool timed = false;
  eval::Verdict verdict;
};

// Where the gate stops.
enum class GateStop : std::uint8_t {
  first_failure,    // at the first point that is not correct or, timed, not faster (the search)
  first_incorrect,  // at the first point that is not correct: every timed point is timed (kdctl)
};

struct RangeGate {
  RangePoints points;
  std::vector<PointResult> results;  // in order, through the point where it stopped
  // Why the kernel fails the range ("n=19: wrong_result (...)", "n=64: not faster than the vendor
  // library by the margin (...)", or the plan's problem); empty when every point passed.
  std::string failure;
  bool passed() const { return failure.empty(); }
  // Correct at every checked point (whether or not it won where timed).
  bool correct() const;
};

// Never throws for anything the kernel does. `range_key` must be a range (GemmKey::is_range) with a
// device part; a `range_plan` that fails range_plan_problem fails the gate before any point runs.
// `options` apply at every point, with timing measured at the timed points and skipped elsewhere.
RangeGate gate_range_kernel(EvalBackend& backend, const GemmKey& range_key, const std::string& cubin,
                            const LaunchPlan& range_plan, const eval::EvalOptions& options, GateStop stop);

}  // namespace kd::search::range
