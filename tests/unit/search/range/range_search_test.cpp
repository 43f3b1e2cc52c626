// The range search (issue 29) with real proposers and NVRTC and a scripted backend standing in for
// the GPU: only range-capable candidates are searched, the range gate evaluates each point with
// the plan its rule computes, and a candidate that loses at one timed point is not published.
#include "range/range_search.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "builtin/builtin_proposer.hpp"

namespace kd::search::range {
namespace {

// Candidate time by the request's n (key line), baseline 100 us; every gate passes unless told.
class ScriptedBackend final : public EvalBackend {
public:
  explicit ScriptedBackend(std::function<double(std::int64_t n)> time_us) : time_us_(std::move(time_us)) {}
  eval::Verdict evaluate(const eval::EvalRequest& request) override {
    const GemmKey key = std::get<GemmKey>(parse_key(request.key_line));
    EXPECT_FALSE(key.is_range()) << "one shape per evaluation";
    EXPECT_FALSE(request.plan.has_rules()) << "the plan is computed for the request's n";
    requests.push_back(request);
    eval::Verdict v;
    const double us = time_us_(key.n);
    if (request.options.timing == eval::Timing::skip && !wrong_at.contains(key.n)) {
      v.rule = eval::Rule::not_faster;
      return v;
    }
    if (wrong_at.contains(key.n)) {
      v.rule = eval::Rule::wrong_result;
      v.detail = "max_rel 1";
      return v;
    }
    v.rule = us < 97 ? eval::Rule::passed : eval::Rule::not_faster;
    v.candidate_time = eval::TimeStats{us, us, us, 20};
    v.baseline_time = eval::TimeStats{100, 100, 100, 20};
    return v;
  }
  double floor_us(const GemmKey&) override { return 1; }
  std::vector<eval::EvalRequest> requests;
  std::set<std::int64_t> wrong_at;  // the n whose outputs are wrong

private:
  std::function<double(std::int64_t)> time_us_;
};

CompileService& compiler() {
  static CompileService service;
  return service;
}

const GemmKey kRange = std::get<GemmKey>(parse_key(
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=256 n=33..64 k=256 lda=256 ldb=256 ldc=256 batch=1 "
    "epilogue=none beta0=1 arch=sm_80 gpu=\"NVIDIA A100\" sms=108"));

SearchOptions small_budget() {
  SearchOptions o;
  o.budget.rounds = 0;
  o.budget.max_candidates = 4;
  return o;
}

TEST(RangeSearch, PublishesARangeThatWinsAtEveryTimedPoint) {
  builtin::BuiltinProposer builtin;
  const builtin::Target target{"sm_80", 108, 166912, 8};
  ScriptedBackend backend([](std::int64_t) { return 50.0; });
  const RangeOutcome out =
      run_range_search(kRange, target, {&builtin}, compiler(), &backend, small_budget(), {});
  ASSERT_TRUE(out.winner) << out.reason;
  ASSERT_TRUE(out.candidate);
  EXPECT_FALSE(out.points.timed.empty());
  for (const Node& n : out.search.tree.nodes()) EXPECT_FALSE(n.family.empty()) << "only builtin configurations";
  // The range gate's requests cover every checked point, each with the grid the rule computes.
  const std::string& cubin = out.search.builds.at(*out.winner).cubin;
  std::vector<std::int64_t> gated;
  for (const auto& r : backend.requests) {
    if (r.cubin != cubin) continue;
    const GemmKey k = std::get<GemmKey>(parse_key(r.key_line));
    gated.push_back(k.n);
    EXPECT_EQ(r.plan, std::get<LaunchPlan>(plan_at_n(out.candidate->plan, k.n))) << "n=" << k.n;
  }
  for (const std::int64_t n : out.points.checked) EXPECT_TRUE(std::ranges::count(gated, n)) << n;

  const Record r = make_range_record(out, kRange.full_line(), {"13.0", 13000, 0});
  EXPECT_EQ(r.key_line, kRange.full_line());
  EXPECT_TRUE(r.plan.has_rules() || r.plan.launches.size() > 0);
  EXPECT_FALSE(range_plan_problem(r.plan, 33, 64));
  EXPECT_EQ(r.source, out.candidate->source);
  const auto report = nlohmann::json::parse(r.validation_report);
  EXPECT_EQ(report.at("range").at("lo"), 33);
  EXPECT_EQ(report.at("range").at("hi"), 64);
  EXPECT_EQ(report.at("range").at("checked").size(), out.points.checked.size());
  EXPECT_EQ(report.at("range").at("timed").size(), out.points.timed.size());
  EXPECT_DOUBLE_EQ(r.candidate_us, 50.0);
}

TEST(RangeSearch, AStoredRangeRecordIsGatedAgainAtItsPoints) {
  builtin::BuiltinProposer builtin;
  const builtin::Target target{"sm_80", 108, 166912, 8};
  ScriptedBackend backend([](std::int64_t) { return 50.0; });
  const RangeOutcome out = run_range_search(kRange, target, {&builtin}, compiler(), &backend, small_budget(), {});
  ASSERT_TRUE(out.winner) << out.reason;
  const Record r = make_range_record(out, kRange.full_line(), {"13.0", 13000, 0});
  backend.requests.clear();
  const eval::Verdict v = verify_range_record(backend, r);
  EXPECT_TRUE(v.correct()) << v.detail;
  ASSERT_EQ(backend.requests.size(), out.points.checked.size());
  EXPECT_EQ(backend.requests.back().options.timing, eval::Timing::measure) << "timed at the range's last n";
  EXPECT_EQ(backend.requests.front().options.timing, eval::Timing::skip);

  Record stale = r;
  for (LaunchSpec& l : stale.plan.launches)
    for (std::size_t d = 0; d < 3; ++d)
      if (l.grid_rule[d]) l.grid[d] += 1;
  if (stale.plan.has_rules()) {
    EXPECT_EQ(verify_range_record(backend, stale).rule, eval::Rule::plan_invalid);
  }
  Record exact = r;
  exact.key_line = kRange.at_n(64).full_line();
  EXPECT_EQ(verify_range_record(backend, exact).rule, eval::Rule::key_invalid);
}

TEST(RangeSearch, LosingAtOneTimedPointPublishesNothing) {
  builtin::BuiltinProposer builtin;
  const builtin::Target target{"sm_80", 108, 166912, 8};
  // Fast at HI (where the search ranks) and in the middle, slow at the range's first n.
  ScriptedBackend backend([](std::int64_t n) { return n == 33 ? 120.0 : 50.0; });
  const RangeOutcome out =
      run_range_search(kRange, target, {&builtin}, compiler(), &backend, small_budget(), {});
  EXPECT_FALSE(out.winner);
  EXPECT_NE(out.reason.find("n=33: not faster"), std::string::npos) << out.reason;
}

// A range plan by hand: 8 x ceil(n / 16) blocks, so no compile is needed (the backend is scripted).
LaunchPlan sixteen_column_plan() {
  LaunchPlan plan;
  plan.launches.push_back({"kd_main", {8, 4, 1}, {256, 1, 1}, 0});
  plan.launches[0].grid_rule[1] = GridRule{.offset = 15, .div = 16};
  return plan;
}

TEST(RangeGate, KdctlsGateTimesEveryTimedPointAndStopsOnlyWhereAKernelIsWrong) {
  // Slow at the range's first n: the search's gate stops there, kdctl's times the rest too.
  ScriptedBackend backend([](std::int64_t n) { return n == 33 ? 120.0 : 50.0; });
  const RangeGate search = gate_range_kernel(backend, kRange, "cubin", sixteen_column_plan(), {}, GateStop::first_failure);
  EXPECT_FALSE(search.passed());
  EXPECT_NE(search.failure.find("n=33: not faster"), std::string::npos) << search.failure;
  EXPECT_EQ(search.results.size(), 1u);
  backend.requests.clear();
  const RangeGate all = gate_range_kernel(backend, kRange, "cubin", sixteen_column_plan(), {}, GateStop::first_incorrect);
  EXPECT_FALSE(all.passed());
  EXPECT_TRUE(all.correct());
  EXPECT_NE(all.failure.find("n=33: not faster"), std::string::npos) << all.failure;
  ASSERT_EQ(all.results.size(), all.points.checked.size());
  ASSERT_EQ(backend.requests.size(), all.points.checked.size());
  for (std::size_t i = 0; i < all.results.size(); ++i) {
    const std::int64_t n = all.results[i].n;
    EXPECT_EQ(all.results[i].timed, std::ranges::count(all.points.timed, n) == 1) << n;
    EXPECT_EQ(backend.requests[i].plan.launches[0].grid[1], static_cast<std::uint32_t>((n + 15) / 16)) << n;
    EXPECT_EQ(backend.requests[i].options.timing, all.results[i].timed ? eval::Timing::measure : eval::Timing::skip);
  }
  // Wrong at an untimed point inside: both stop there, and the kernel is not correct.
  ScriptedBackend wrong([](std::int64_t) { return 50.0; });
  const RangePoints points = range_points(kRange.n, kRange.n_hi, sixteen_column_plan());
  const auto inside = std::ranges::find_if(points.checked, [&](std::int64_t n) {
    return !std::ranges::count(points.timed, n);
  });
  ASSERT_NE(inside, points.checked.end());
  wrong.wrong_at.insert(*inside);
  const RangeGate bad = gate_range_kernel(wrong, kRange, "cubin", sixteen_column_plan(), {}, GateStop::first_incorrect);
  EXPECT_FALSE(bad.correct());
  EXPECT_EQ(bad.results.back().n, *inside);
  EXPECT_NE(bad.failure.find(fmt::format("n={}: wrong_result", *inside)), std::string::npos) << bad.failure;
  // Everywhere faster and correct: passed.
  ScriptedBackend fast([](std::int64_t) { return 50.0; });
  EXPECT_TRUE(gate_range_kernel(fast, kRange, "cubin", sixteen_column_plan(), {}, GateStop::first_incorrect).passed());
}

TEST(RangeGate, APlanThatDoesNotServeTheRangeRunsNothing) {
  ScriptedBackend backend([](std::int64_t) { return 50.0; });
  LaunchPlan stale = sixteen_column_plan();
  stale.launches[0].grid[1] = 5;  // the rule gives 4 at n = 64
  const RangeGate gate = gate_range_kernel(backend, kRange, "cubin", stale, {}, GateStop::first_incorrect);
  EXPECT_FALSE(gate.passed());
  EXPECT_FALSE(gate.correct());
  EXPECT_NE(gate.failure.find("the plan does not serve the range"), std::string::npos) << gate.failure;
  EXPECT_TRUE(backend.requests.empty());
}

}  // namespace
}  // namespace kd::search::range
