// The evaluator: the validation gate and the timing of design.md, run in-process on one GPU, for
// kernel candidates and cuBLASLt algorithms alike (eval/candidate.hpp).
// kdispatch-worker calls it in a loop (worker/worker_process.hpp); tests and `kdctl validate` may
// call it directly. A candidate that hangs never returns from evaluate(): run untrusted kernels in
// the worker (worker/worker_parent.hpp), whose parent kills it.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "cublaslt/algo.hpp"
#include "eval/cublaslt_enumeration.hpp"
#include "eval/roofline.hpp"
#include "eval/verdict.hpp"
#include "plan/launch_plan.hpp"

namespace kd::eval {

enum class Timing : std::uint8_t { measure, skip };

struct EvalOptions {
  int trials = 5;                  // gate trials: fresh seeds, distributions cycling (>= 1)
  double error_factor = 2.0;       // candidate error <= factor * vendor error + floor
  Timing timing = Timing::measure; // skip: stop after the gate (verdict not_faster, no times)
  // The isolated regime (one cold launch per run, the second figure).
  int warmup_runs = 3;
  int min_timed_runs = 20;
  int max_timed_runs = 200;
  std::chrono::milliseconds timing_budget{600};  // stop after min runs once this is spent
  // The serving regime (graph replays of R calls each; the ranking figure).
  int serving_min_replays = 12;
  int serving_max_replays = 200;
  std::chrono::milliseconds serving_budget{1000};
  double win_margin = 0.03;  // a pass beats the baseline's median by 3% beyond the spread
  std::uint64_t seed = 0x6B64697370617463ull;
  bool operator==(const EvalOptions&) const = default;
};

struct EvalRequest {
  std::string key_line;  // shape line or full key
  std::string cubin;     // for the evaluator's device arch
  LaunchPlan plan;
  EvalOptions options;
  // Set: the candidate is this cuBLASLt algorithm, run through cublasLtMatmul; cubin and plan are
  // unused. It must come from the evaluator's own cuBLASLt version (else load_failed).
  std::optional<CublasLtAlgo> cublaslt;
};

struct EvaluatorConfig {
  int device_ordinal = 0;
  // Where the measured roofline is stored and reused (the daemon's cache dir). Empty: measure,
  // keep in memory only.
  std::filesystem::path roofline_dir;
  // Use this roofline instead of measuring (tests); peaks missing from it mean no flops floor.
  std::optional<Roofline> roofline_override;
};

class Evaluator {
public:
  // Retains the device's primary context and makes it current on this thread, creates the stream,
  // compiles the helper kernels and loads or measures the bandwidth part of the roofline.
  // Throws kd::Error when the device or NVRTC is unusable.
  explicit Evaluator(EvaluatorConfig config);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Runs the gate, then timing. Every outcome is a Verdict; never throws for anything a candidate
  // does. Must be called on the thread that constructed the Evaluator.
  Verdict evaluate(const EvalRequest& request);

  // The cuBLASLt algorithms for `key_line` on this device (eval/cublaslt_enumeration.hpp), or why
  // there are none to offer: an unparsable key or one for another arch, cuBLASLt missing or
  // refusing the key. Never throws. Same thread rule as evaluate().
  std::variant<cublaslt::Enumeration, std::string> enumerate_cublaslt(const std::string& key_line,
                                                                      const cublaslt::EnumerationOptions& options);

  // Compiles `source` for this device (compile_failed), parses its plan (plan_invalid), evaluates.
  Verdict evaluate_source(const std::string& key_line, const std::string& source,
                          const EvalOptions& options);

  // false after a sticky CUDA error (trap, illegal address): the context is lost and this object
  // can only report `crashed`. The worker exits then so that its parent starts a fresh one.
  bool context_usable() const noexcept;

  const Roofline& roofline() const noexcept;
  std::string device_arch() const;
  std::string device_name() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kd::eval
