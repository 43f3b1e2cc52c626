// What the validation gate and the timing say about one candidate (design.md, "The validation
// gate" and "Timing"). Rule names are stable strings: they are stored in records and printed by
// kdctl, so a rule is never renamed or reused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kd::eval {

enum class Rule : std::uint8_t {
  passed,                       // correct, and faster than the baseline by the margin
  not_faster,                   // correct, but not faster by the margin beyond the spread
  key_invalid,                  // the key line does not parse or is for another GPU
  compile_failed,               // NVRTC rejected the source
  plan_invalid,                 // no/bad kdispatch:plan, unknown entry, too much shared memory
  load_failed,                  // the driver refused the cubin
  launch_failed,                // cuLaunchKernel refused a launch of the plan
  unwritten_output,             // output elements still hold the NaN poison
  nan_or_inf,                   // NaN or Inf where the fp64 reference is finite
  wrong_result,                 // error far beyond the vendor library's
  precision_below_class,        // small, uniform error, yet above 2x the vendor library's
  input_modified,               // A, B, bias or the initial C changed
  guard_band_overwritten,       // writes before/after the output or into its padding
  workspace_guard_overwritten,  // writes before/after the workspace
  state_between_calls,          // a later call fails where a freshly loaded module passes
  nondeterministic,             // two runs on the same inputs disagree (races)
  timed_output_mismatch,        // an output of a timed run fails the check
  faster_than_roofline,         // a time under the bandwidth/peak floor: impossible
  hang_timeout,                 // the watchdog killed the worker
  crashed,                      // trap, illegal address, or the worker died
  internal_error,               // the evaluator itself failed (not the candidate's fault)
  read_before_grid_wait,        // a "pdl" first launch read inputs before griddepcontrol.wait
};

std::string_view to_string(Rule rule);
std::optional<Rule> rule_from_string(std::string_view name);
// Every rule, in declaration order (for tables and tests).
const std::vector<Rule>& all_rules();

// A candidate's (or the vendor library's) error against the fp64 reference.
struct ErrorFigures {
  double max_rel = 0.0;   // max |out - ref| / max(|ref|, floor)
  double norm_rel = 0.0;  // ||out - ref||_2 / ||ref||_2
  // sum (out - ref) sgn(ref) / sum |ref|: the error's systematic lean, negative toward zero (issue
  // 30: a sum of many outputs, a gradient summed over tokens, keeps a lean that max_rel and
  // norm_rel do not show, while their random parts cancel). Measured and reported, not judged.
  double lean = 0.0;
};

struct TimeStats {
  double median_us = 0.0;
  double p25_us = 0.0;
  double p75_us = 0.0;
  int samples = 0;
  double spread_us() const { return p75_us - p25_us; }  // inter-quartile range
};

// One gate trial, as recorded in the report.
struct TrialReport {
  int trial = 0;
  std::string distribution;
  double alpha = 1.0, beta = 0.0;
  ErrorFigures candidate, vendor;
  double allowed_max_rel = 0.0, allowed_norm_rel = 0.0;
};

// The regime the ranking times were taken in (design.md, "Timing").
enum class TimingRegime : std::uint8_t {
  isolated,  // one cold launch after an L2 flush, event-timed (verdicts before the serving regime)
  serving,   // R back-to-back calls in one CUDA graph over rotating weight copies, per call
};
std::string_view to_string(TimingRegime regime);

struct Verdict {
  Rule rule = Rule::internal_error;
  std::string detail;  // human-readable reason; the CUDA error text for crashes
  int failed_trial = -1;
  std::vector<TrialReport> trials;
  // Worst over trials of candidate/vendor errors.
  ErrorFigures candidate_error, vendor_error;
  // The ranking times, in `regime`: compare_with_baseline (timing_stats.hpp) compares these.
  std::optional<TimeStats> candidate_time, baseline_time;
  TimingRegime regime = TimingRegime::isolated;
  // The isolated regime's times, kept as a second figure when the ranking regime is serving.
  std::optional<TimeStats> isolated_candidate_time, isolated_baseline_time;
  // What the baseline times are of, when not the intercepted vendor call: a row operator's
  // framework kernel ("torch 2.11.0 F.layer_norm"), or the evaluator's stand-in and why.
  std::string baseline_name;
  // Serving regime: per-call time of a streaming read of the call's inputs (0: not measured), and
  // the graph's calls and weight copies.
  double stream_us = 0.0;
  int serving_calls = 0, serving_copies = 0;
  double floor_us = 0.0;     // roofline floor for the key (a time under kRooflineSlack x it is rejected)
  int sm_clock_mhz = 0;      // observed during timing; 0 when not measured
  double elapsed_s = 0.0;    // wall time of the evaluation

  bool accepted() const { return rule == Rule::passed; }
  // Correct (every gate rule passed), whether or not it was faster.
  bool correct() const { return rule == Rule::passed || rule == Rule::not_faster; }
};

nlohmann::json to_json(const Verdict& v);
// Throws kd::Error (domain data) on a malformed object or unknown rule.
Verdict verdict_from_json(const nlohmann::json& j);

}  // namespace kd::eval
