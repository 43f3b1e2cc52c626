// What the validation gate and the timing (eval/gate.hpp) need from one operator's problem: inputs
// for a trial, the fp64 reference, the candidate's arguments, the baseline call (the vendor's, or
// the framework's kernel the application would have run), the output checks and the serving
// regime's rotated copies. The gate's rules (poison, guard bands, input checksums, agreement of two
// runs, the error criterion, state between calls, dependent first launches, the roofline floor, the
// two timing regimes) are the gate's, the same for every operator; an operator (GEMM:
// eval/gemm_gate_problem.hpp, rows: eval/row_problem.hpp) only says what its data and calls are.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <string>
#include <string_view>

#include "eval/error_criterion.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/kernel_args.hpp"
#include "eval/roofline.hpp"
#include "eval/serving_regime.hpp"
#include "eval/verdict.hpp"

namespace kd::eval {

// One gate trial's inputs: a value distribution and its scale, and for GEMM the alpha and beta
// (beta used only when the key's beta is not zero).
struct TrialShape {
  Distribution dist;
  double scale;
  std::string_view name;
  double alpha;
  double beta;
};

// Findings of one run's checks, before judging.
struct RunFindings {
  GuardStats c_guards, workspace_guards;
  bool inputs_changed = false;
  std::string changed_inputs;  // "A, bias"
  CompareStats compare;
};

// Baseline times measured outside the evaluator (a row operator's framework kernel).
struct ExternalBaseline {
  std::string name;
  TimeStats serving, isolated;
};

class GateProblem {
public:
  // Operand sets: trials alternate between them (a kernel that caches by address is caught), and
  // each set is refilled in place (one that caches by content is caught).
  static constexpr int kSets = 2;
  enum class CompareWith { reference, saved_output };

  virtual ~GateProblem() = default;

  virtual std::string shape_line() const = 0;
  virtual long long outputs() const = 0;  // elements compared per run
  // The trials cycle through these.
  virtual std::span<const TrialShape> trial_shapes() const = 0;
  // The beta a trial of `t` runs with (0 when the call does not read its output).
  virtual double trial_beta(const TrialShape& t) const = 0;

  // Fresh inputs for set s (poison in outputs the call does not read), checksummed. Synchronous.
  virtual void fill(int s, std::uint64_t seed, const TrialShape& t) = 0;
  // The fp64 reference of set s; sets the floor of its relative errors. Synchronous.
  virtual void compute_reference(int s) = 0;
  // The output of set s back to its initial image (poison or the call's C). Asynchronous.
  virtual void restore_output(int s) = 0;
  // Keeps set s's output for the agreement of two runs. Asynchronous.
  virtual void save_output(int s) = 0;
  // Guards, input checksums and the comparison. Synchronous.
  virtual RunFindings check_output(int s, CompareWith with) = 0;
  virtual ErrorFigures figures(const CompareStats& c) const = 0;
  // Runs the baseline call on set s into its own output and returns its error. Synchronous.
  virtual ErrorFigures baseline_figures(int s) = 0;
  // Enqueues the baseline call on set s (timing). Asynchronous.
  virtual void run_baseline(int s) = 0;
  // For a candidate whose first launch is a programmatic dependent: poisons set s's inputs and
  // output and queues a producer that writes them back late; the candidate's launch follows at once.
  virtual void queue_late_inputs(int s) = 0;
  // The candidate's arguments on set s (its workspace included).
  virtual KernelArgs args(int s) const = 0;

  virtual Tolerance tolerance(double factor) const = 0;
  virtual double floor_us(const Roofline& r) const = 0;  // the roofline floor, without slack
  virtual void flush_l2() = 0;                            // Asynchronous.
  virtual int probe_sm_clock_mhz() = 0;                   // Synchronous.

  // The serving regime (eval/serving_regime.hpp). The last call of a candidate's graph writes set
  // s's output; whether that output must then match the reference (a GEMM with beta != 0
  // accumulates over the calls, so only the isolated runs check it).
  virtual bool serving_output_checkable() const = 0;
  virtual ServingShape serving_shape(std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) const = 0;
  // Makes the copies of set s's rotated operand (copy 0 is the set's own). Synchronous.
  virtual void make_serving_copies(int s, const ServingShape& shape) = 0;
  // Call `call` of a graph: the arguments with the rotated operand replaced by its copy.
  virtual KernelArgs serving_args(int s, int call) const = 0;
  // Enqueues the baseline's call `call` on its copy, and a streaming read of what that call reads.
  virtual void serving_baseline(int s, int call) = 0;
  virtual void serving_stream_read(int s, int call) = 0;

  // The baseline's times when they come from outside the evaluator: they replace the baseline
  // call's times in the ranking and the second figure. monostate: the baseline call is the
  // baseline (GEMM: the intercepted cuBLAS call); a string: there should be an external baseline
  // but there is none, and why (the baseline call's times stand in).
  virtual std::variant<std::monostate, ExternalBaseline, std::string> external_baseline() { return std::monostate{}; }
};

}  // namespace kd::eval
