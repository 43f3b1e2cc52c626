#include "range/range_gate.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "driver/search_driver.hpp"

namespace kd::search::range {

bool RangeGate::correct() const {
  if (results.size() != points.checked.size() || results.empty()) return false;
  return std::all_of(results.begin(), results.end(), [](const PointResult& r) { return r.verdict.correct(); });
}

RangeGate gate_range_kernel(EvalBackend& backend, const GemmKey& range_key, const std::string& cubin,
                            const LaunchPlan& range_plan, const eval::EvalOptions& options, GateStop stop) {
  RangeGate gate;
  if (const auto problem = range_plan_problem(range_plan, range_key.n, range_key.n_hi)) {
    gate.failure = "the plan does not serve the range: " + *problem;
    return gate;
  }
  gate.points = range_points(range_key.n, range_key.n_hi, range_plan);
  for (const std::int64_t n : gate.points.checked) {
    const bool timed = std::binary_search(gate.points.timed.begin(), gate.points.timed.end(), n);
    // Checked above: every n of the range has a plan.
    LaunchPlan plan = std::get<LaunchPlan>(plan_at_n(range_plan, n));
    eval::EvalOptions o = options;
    o.timing = timed ? eval::Timing::measure : eval::Timing::skip;
    eval::EvalRequest req{range_key.at_n(n).full_line(), cubin, std::move(plan), o, std::nullopt};
    gate.results.push_back({n, timed, backend.evaluate(req)});
    const eval::Verdict& v = gate.results.back().verdict;
    if (!v.correct()) {
      gate.failure = fmt::format("n={}: {} ({})", n, eval::to_string(v.rule), v.detail);
      return gate;
    }
    if (timed && !v.accepted() && gate.failure.empty()) {
      gate.failure = fmt::format("n={}: not faster than the vendor library by the margin ({})", n, v.detail);
      if (stop == GateStop::first_failure) return gate;
    }
  }
  return gate;
}

}  // namespace kd::search::range
