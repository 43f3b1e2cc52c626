#include "eval/gate.hpp"

#include <array>
#include <chrono>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "eval/cuda_event.hpp"
#include "eval/error_criterion.hpp"
#include "eval/serving_timing.hpp"
#include "eval/timing_stats.hpp"

namespace kd::eval {
namespace {

struct Failure {
  Rule rule;
  std::string detail;
};

bool is_output_rule(Rule r) {
  return r == Rule::unwritten_output || r == Rule::nan_or_inf || r == Rule::wrong_result ||
         r == Rule::precision_below_class;
}

// Memory rules: writes outside the output, changed inputs.
std::optional<Failure> judge_memory(const RunFindings& f) {
  if (f.c_guards.total() != 0) {
    return Failure{Rule::guard_band_overwritten,
                   fmt::format("output: {} elements changed before it, {} after it, {} in its padding",
                               f.c_guards.before, f.c_guards.after, f.c_guards.padding)};
  }
  if (f.workspace_guards.total() != 0) {
    return Failure{Rule::workspace_guard_overwritten,
                   fmt::format("workspace: {} elements changed before it, {} after it",
                               f.workspace_guards.before, f.workspace_guards.after)};
  }
  if (f.inputs_changed) return Failure{Rule::input_modified, "changed: " + f.changed_inputs};
  return std::nullopt;
}

std::optional<Failure> judge_run(const RunFindings& f, const ErrorFigures& cand,
                                 const Allowance& allowed, long long outputs) {
  if (auto m = judge_memory(f)) return m;
  if (f.compare.poisoned != 0) {
    return Failure{Rule::unwritten_output,
                   fmt::format("{} of {} outputs never written (still NaN poison)", f.compare.poisoned, outputs)};
  }
  if (f.compare.nonfinite != 0) {
    return Failure{Rule::nan_or_inf,
                   fmt::format("{} of {} outputs NaN or Inf where the reference is finite",
                               f.compare.nonfinite, outputs)};
  }
  const std::string figures =
      fmt::format("max_rel {:.3g} (allowed {:.3g}), norm_rel {:.3g} (allowed {:.3g})", cand.max_rel,
                  allowed.max_rel, cand.norm_rel, allowed.norm_rel);
  switch (judge_error(cand, allowed)) {
    case ErrorJudgement::within: return std::nullopt;
    case ErrorJudgement::precision_below_class:
      return Failure{Rule::precision_below_class, "error above 2x the vendor's: " + figures};
    case ErrorJudgement::wrong: return Failure{Rule::wrong_result, figures};
  }
  return std::nullopt;
}

class GateRun {
public:
  GateRun(const GateContext& ctx, GateProblem& problem, const GateCandidate& candidate)
      : ctx_(ctx), candidate_(candidate), problem_(problem), tol_(problem.tolerance(ctx.options.error_factor)),
        outputs_(problem.outputs()) {}

  Verdict run() {
    if (auto f = run_trials()) return fail(*f);
    if (ctx_.options.timing == Timing::skip) {
      verdict_.rule = Rule::not_faster;
      verdict_.detail = "correct; timing skipped";
      return verdict_;
    }
    if (auto f = run_timing()) return fail(*f);
    return verdict_;
  }

private:
  Verdict fail(const Failure& f) {
    verdict_.rule = f.rule;
    verdict_.detail = f.detail;
    return verdict_;
  }

  // How a gate run gets its inputs. A candidate whose first launch is a programmatic dependent
  // runs behind a producer that writes them late (GateProblem::queue_late_inputs), unless told
  // otherwise (to tell an early read from a wrong result).
  enum class Inputs { as_dependent, ready };

  // Enqueues the candidate on set s; a refused launch is launch_failed. wait() synchronizes: an
  // error there (trap, illegal address) is crashed.
  std::optional<Failure> launch(const GateCandidate& c, int s) {
    if (const std::optional<std::string> refused = c.launch(problem_.args(s), ctx_.stream)) {
      // A refused launch leaves the context usable; anything sticky surfaced from before is a crash.
      if (cu().cuCtxSynchronize() != CUDA_SUCCESS) return Failure{Rule::crashed, *refused};
      return Failure{Rule::launch_failed, *refused};
    }
    return std::nullopt;
  }
  std::optional<Failure> wait() {
    const CUresult rc = cu().cuStreamSynchronize(ctx_.stream);
    if (rc != CUDA_SUCCESS) return Failure{Rule::crashed, cuda_error_name(rc)};
    return std::nullopt;
  }
  std::optional<Failure> run_once(const GateCandidate& c, int s, Inputs inputs = Inputs::as_dependent) {
    problem_.restore_output(s);
    if (inputs == Inputs::as_dependent && c.depends_on_previous_kernel()) problem_.queue_late_inputs(s);
    if (auto f = launch(c, s)) return f;
    return wait();
  }

  // After an output failure of a dependent first launch behind the late producer: the same run with
  // its inputs ready. Passing then means the kernel read its inputs before griddepcontrol.wait.
  std::optional<Failure> early_read(int s, const Allowance& allowed, const Failure& seen) {
    if (!candidate_.depends_on_previous_kernel() || !is_output_rule(seen.rule)) return std::nullopt;
    if (run_once(candidate_, s, Inputs::ready)) return std::nullopt;
    const RunFindings f = problem_.check_output(s, GateProblem::CompareWith::reference);
    if (judge_run(f, problem_.figures(f.compare), allowed, outputs_)) return std::nullopt;
    return Failure{Rule::read_before_grid_wait,
                   fmt::format("behind a kernel that writes the inputs late it fails ({}: {}); with the inputs "
                               "ready it passes: its first launch is a programmatic dependent (\"pdl\") that "
                               "reads before griddepcontrol.wait",
                               to_string(seen.rule), seen.detail)};
  }

  ErrorFigures vendor_figures(int s) { return problem_.baseline_figures(s); }

  std::optional<Failure> run_trials() {
    const EvalOptions& opt = ctx_.options;
    double rerun_diff = 0.0;  // trial 0: how far a second run on the same inputs moved the output
    for (int t = 0; t < std::max(opt.trials, 1); ++t) {
      // Trials 0,1 share set 0's buffers (new data at the same address), 2,3 use set 1, ...
      const int s = (t / 2) % GateProblem::kSets;
      const std::span<const TrialShape> shapes = problem_.trial_shapes();
      const TrialShape& shape = shapes[static_cast<std::size_t>(t) % shapes.size()];
      const double beta = problem_.trial_beta(shape);
      problem_.fill(s, opt.seed + 7919ull * static_cast<std::uint64_t>(t), shape);
      problem_.compute_reference(s);
      const ErrorFigures vendor = vendor_figures(s);
      const Allowance allowed = allowed_error(vendor, tol_);
      verdict_.failed_trial = t;
      if (auto f = run_once(candidate_, s)) return f;
      RunFindings found = problem_.check_output(s, GateProblem::CompareWith::reference);
      if (t == 0 && candidate_.depends_on_previous_kernel()) {
        // Named before the agreement check, which an early read also fails.
        if (auto f = judge_run(found, problem_.figures(found.compare), allowed, outputs_))
          if (auto early = early_read(s, allowed, *f)) return early;
      }
      if (t == 0) {
        // Two runs on the same inputs must agree (races). Checked before correctness, so that a
        // race is named as such rather than as a wrong result.
        if (auto f = judge_memory(found)) return f;
        problem_.save_output(s);
        if (auto f = run_once(candidate_, s)) return f;
        const RunFindings again = problem_.check_output(s, GateProblem::CompareWith::saved_output);
        if (auto f = judge_memory(again)) return f;
        if (again.compare.nonfinite != 0 || again.compare.max_rel > allowed.max_rel) {
          return Failure{Rule::nondeterministic,
                         fmt::format("two runs on the same inputs differ: max_rel {:.3g} (allowed {:.3g}), "
                                     "{} elements finite in one run only",
                                     again.compare.max_rel, allowed.max_rel, again.compare.nonfinite)};
        }
        rerun_diff = again.compare.max_rel;  // > 0 when any bits differ (equal bits compare as equal)
        found = problem_.check_output(s, GateProblem::CompareWith::reference);
      }
      const ErrorFigures cand = problem_.figures(found.compare);
      verdict_.trials.push_back({t, std::string(shape.name), shape.alpha, beta, cand, vendor,
                                 allowed.max_rel, allowed.norm_rel});
      worst(verdict_.candidate_error, cand);
      worst(verdict_.vendor_error, vendor);
      if (auto f = judge_run(found, cand, allowed, outputs_)) {
        if (auto early = early_read(s, allowed, *f)) return early;
        if (t > 0 && is_output_rule(f->rule) && fresh_module_passes(s, allowed)) {
          return Failure{Rule::state_between_calls,
                         fmt::format("call {} fails where a freshly loaded module passes the same inputs: {}: {}",
                                     t + 1, to_string(f->rule), f->detail)};
        }
        // Named by its inputs: "mean 1000, std 0.1" tells a single-pass variance from a plain bug.
        f->detail = fmt::format("trial {} ({}): {}", t + 1, shape.name, f->detail);
        return f;
      }
      if (t == 0 && rerun_diff > 0.0) {
        // Correct, but not reproducible: cuBLAS gives the same bits for the same inputs on every
        // run, and a kernel that takes its place must not take that away (ARCHITECTURE.md).
        return Failure{Rule::nondeterministic,
                       fmt::format("correct within the tolerance (max_rel {:.3g} against fp64), but two runs on the "
                                   "same inputs return different bits (max_rel {:.3g} between them): the order of a "
                                   "sum changes between runs, as with float atomics; cuBLAS returns the same bits "
                                   "every run",
                                   cand.max_rel, rerun_diff)};
      }
    }
    verdict_.failed_trial = -1;
    return std::nullopt;
  }

  // The same trial on a freshly made candidate: passing means the failure came from state kept
  // by earlier calls (a counter, a cache keyed by address).
  bool fresh_module_passes(int s, const Allowance& allowed) {
    const std::unique_ptr<GateCandidate> fresh = candidate_.fresh();
    if (!fresh) return false;
    if (run_once(*fresh, s)) return false;
    const RunFindings f = problem_.check_output(s, GateProblem::CompareWith::reference);
    return !judge_run(f, problem_.figures(f.compare), allowed, outputs_).has_value();
  }

  static void worst(ErrorFigures& into, const ErrorFigures& e) {
    into.max_rel = std::max(into.max_rel, e.max_rel);
    into.norm_rel = std::max(into.norm_rel, e.norm_rel);
    if (std::abs(e.lean) > std::abs(into.lean)) into.lean = e.lean;
  }

  // The output of a timed run, checked like a gate trial (its reference and vendor error are
  // recomputed for the set it ran on).
  std::optional<Failure> check_timed(int s) {
    if (auto f = wait()) return f;
    problem_.compute_reference(s);
    const RunFindings found = problem_.check_output(s, GateProblem::CompareWith::reference);
    const Allowance allowed = allowed_error(vendor_figures(s), tol_);
    if (auto f = judge_run(found, problem_.figures(found.compare), allowed, outputs_)) {
      return Failure{Rule::timed_output_mismatch,
                     fmt::format("a timed run's output fails: {}: {}", to_string(f->rule), f->detail)};
    }
    return std::nullopt;
  }

  // One interleaved iteration: each side starts with a flushed L2; order alternates.
  std::optional<Failure> timed_iteration(int i, std::vector<double>& cand_us, std::vector<double>& vend_us) {
    const int s = i % GateProblem::kSets;
    const auto time_candidate = [&]() -> std::optional<Failure> {
      problem_.flush_l2();
      record(ev_[0], ctx_.stream);
      if (auto f = launch(candidate_, s)) return f;
      record(ev_[1], ctx_.stream);
      return std::nullopt;
    };
    const auto time_vendor = [&] {
      problem_.flush_l2();
      record(ev_[2], ctx_.stream);
      problem_.run_baseline(s);
      record(ev_[3], ctx_.stream);
    };
    if (i % 2 == 0) {
      if (auto f = time_candidate()) return f;
      time_vendor();
    } else {
      time_vendor();
      if (auto f = time_candidate()) return f;
    }
    if (auto f = wait()) return f;
    cand_us.push_back(elapsed_us(ev_[0], ev_[1]));
    vend_us.push_back(elapsed_us(ev_[2], ev_[3]));
    return std::nullopt;
  }

  std::optional<Failure> run_timing() {
    verdict_.floor_us = problem_.floor_us(ctx_.roofline);
    if (auto f = run_isolated_timing()) return f;
    if (auto f = run_serving_timing()) return f;
    use_external_baseline();
    verdict_.sm_clock_mhz = problem_.probe_sm_clock_mhz();
    const bool faster = compare_with_baseline(*verdict_.candidate_time, *verdict_.baseline_time,
                                              ctx_.options.win_margin) == BaselineComparison::faster;
    verdict_.rule = faster ? Rule::passed : Rule::not_faster;
    const TimeStats& ic = *verdict_.isolated_candidate_time;
    const TimeStats& ib = *verdict_.isolated_baseline_time;
    verdict_.detail = fmt::format(
        "serving: median {:.2f} us (IQR {:.2f}) vs {} {:.2f} us (IQR {:.2f}); isolated: {:.2f} vs {:.2f} us",
        verdict_.candidate_time->median_us, verdict_.candidate_time->spread_us(),
        verdict_.baseline_name.empty() ? "vendor" : verdict_.baseline_name, verdict_.baseline_time->median_us,
        verdict_.baseline_time->spread_us(), ic.median_us, ib.median_us);
    return std::nullopt;
  }

  // A baseline timed outside the evaluator replaces the baseline call's times (eval/gate_problem.hpp).
  void use_external_baseline() {
    auto external = problem_.external_baseline();
    if (auto* e = std::get_if<ExternalBaseline>(&external)) {
      verdict_.baseline_time = e->serving;
      verdict_.isolated_baseline_time = e->isolated;
      verdict_.baseline_name = e->name;
    } else if (auto* why = std::get_if<std::string>(&external)) {
      verdict_.baseline_name = "the evaluator's f32 stand-in (" + *why + ")";
    }
  }

  // A time under kRooflineSlack of the floor is impossible (measured ceilings are not exact; the
  // impossible is well below them).
  std::optional<Failure> under_floor(const TimeStats& t, std::string_view regime) const {
    if (t.median_us >= verdict_.floor_us * kRooflineSlack) return std::nullopt;
    return Failure{Rule::faster_than_roofline,
                   fmt::format("{} median {:.2f} us is under {:.0f}% of the roofline floor {:.2f} us", regime,
                               t.median_us, kRooflineSlack * 100, verdict_.floor_us)};
  }

  // The serving regime: graphs of back-to-back calls over rotating weight copies (ranking times).
  std::optional<Failure> run_serving_timing() {
    const EvalOptions& opt = ctx_.options;
    constexpr int s = 0;
    std::size_t free_bytes = 0, total_bytes = 0;
    KD_CU_CHECK(cu().cuMemGetInfo(&free_bytes, &total_bytes), "free memory for weight copies");
    const std::uint64_t budget = std::min<std::uint64_t>(free_bytes / 4, 8ull << 30);
    const ServingShape shape = problem_.serving_shape(ctx_.l2_bytes, verdict_.floor_us, budget);
    ServingTimer timer(problem_, ctx_.stream, s, shape);
    if (auto refused = timer.capture(candidate_)) return Failure{Rule::launch_failed, *refused};
    const ServingTimes t = timer.measure(2, opt.serving_min_replays, opt.serving_max_replays, opt.serving_budget);
    // The last call of the candidate's graph writes set s's output; when nothing earlier in the
    // graph feeds it, it must match the reference (a GEMM with beta != 0 accumulates over the
    // calls: those keys rely on the isolated runs' checks).
    if (problem_.serving_output_checkable()) {
      problem_.restore_output(s);
      timer.replay_candidate();
      if (auto f = check_timed(s)) return f;
    }
    verdict_.regime = TimingRegime::serving;
    verdict_.candidate_time = t.candidate;
    verdict_.baseline_time = t.baseline;
    verdict_.stream_us = t.stream_us;
    verdict_.serving_calls = shape.calls;
    verdict_.serving_copies = shape.copies;
    return under_floor(t.candidate, "serving");
  }

  // The isolated regime: one cold launch after an L2 flush, event-timed (the second figure).
  std::optional<Failure> run_isolated_timing() {
    const EvalOptions& opt = ctx_.options;
    for (Event& e : ev_) e = make_event();
    for (int s = 0; s < GateProblem::kSets; ++s) problem_.restore_output(s);
    std::vector<double> cand_us, vend_us, discard_c, discard_v;
    for (int i = 0; i < opt.warmup_runs; ++i)
      if (auto f = timed_iteration(i, discard_c, discard_v)) return f;
    const auto start = std::chrono::steady_clock::now();
    constexpr int kFirstCheck = 2;  // a re-checked run early, and the last run
    int i = 0;
    for (;; ++i) {
      const bool enough = i >= opt.min_timed_runs &&
                          (i >= opt.max_timed_runs || std::chrono::steady_clock::now() - start >= opt.timing_budget);
      const bool checked = i == kFirstCheck || enough;
      const int s = i % GateProblem::kSets;
      if (checked) problem_.restore_output(s);
      if (auto f = timed_iteration(i, cand_us, vend_us)) return f;
      if (checked)
        if (auto f = check_timed(s)) return f;
      if (enough) break;
    }
    verdict_.isolated_candidate_time = summarize(cand_us);
    verdict_.isolated_baseline_time = summarize(vend_us);
    return under_floor(*verdict_.isolated_candidate_time, "isolated");
  }

  const GateContext& ctx_;
  const GateCandidate& candidate_;
  GateProblem& problem_;
  Tolerance tol_;
  long long outputs_;
  std::array<Event, 4> ev_;
  Verdict verdict_;
};

}  // namespace

Verdict run_gate_and_timing(const GateContext& ctx, GateProblem& problem, const GateCandidate& candidate) {
  GateRun run(ctx, problem, candidate);
  return run.run();
}

}  // namespace kd::eval
