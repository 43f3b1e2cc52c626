// The device-side problem for one key: two operand sets (rotated, so a kernel that caches by
// address is caught; each set is also refilled in place with new data, so one that caches by
// content of the first call is caught), the vendor's output, the fp64 reference, a workspace and
// scratch for results. Every output and workspace sits inside guard bands.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <memory>

#include "eval/device_memory.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/gate_problem.hpp"
#include "eval/problem_scratch.hpp"
#include "eval/serving_regime.hpp"
#include "eval/vendor_baseline.hpp"
#include "eval/verdict.hpp"
#include "kdispatch/gemm.cuh"
#include "key/gemm_key.hpp"

namespace kd::eval {

struct OperandSet {
  GuardedBuffer a, b, bias, c, c_init;  // c_init: the image c is restored from before each run
  std::uint64_t sum_a = 0, sum_b = 0, sum_bias = 0, sum_c_init = 0;  // checksums after filling
  double alpha = 1.0, beta = 0.0;  // of the trial that last filled it
  double floor = 1e-30;            // max_rel denominator floor of its reference
  std::uint64_t seed = 0;
  Distribution dist = Distribution::normal;
  double scale = 1.0;
};

// Element counts and layouts of the key's operands.
DeviceMatrix matrix_a(const GemmKey& key, CUdeviceptr p);
DeviceMatrix matrix_b(const GemmKey& key, CUdeviceptr p);
DeviceMatrix matrix_c(const GemmKey& key, CUdeviceptr p);
// Bytes from an operand's first element to one past its last.
std::uint64_t span_bytes(const DeviceMatrix& x);

// The GEMM problem: the gate's operator interface (eval/gate_problem.hpp) for a GemmKey, with the
// intercepted cuBLAS/cuBLASLt call (eval/vendor_baseline.hpp) as its baseline.
class GemmProblem final : public GateProblem {
public:
  // Allocates everything for `key` and creates the vendor's handles; throws kd::Error (cuda) when
  // memory runs out or cuBLAS fails.
  GemmProblem(const GemmKey& key, std::uint64_t workspace_bytes, const EvalKernels& kernels,
              CUstream stream, std::uint64_t l2_bytes);

  OperandSet& set(int s) { return sets_[static_cast<std::size_t>(s)]; }
  const OperandSet& set(int s) const { return sets_[static_cast<std::size_t>(s)]; }
  const GemmKey& key() const { return key_; }

  // Fills set s with fresh inputs (and C when beta != 0; NaN poison in C when beta == 0) and
  // records their checksums. Synchronous.
  void fill(int s, std::uint64_t seed, Distribution dist, double scale, double alpha, double beta);
  // vendor_c <- c_init of set s.
  void restore_vendor_output(int s);
  // The vendor output against the reference. Synchronous.
  ErrorFigures vendor_error(int s);

  CUdeviceptr workspace() const;   // 0 when the plan asks for none
  CUdeviceptr vendor_output() const { return vendor_c_.body(); }

  // GateProblem.
  std::string shape_line() const override { return key_.shape_line(); }
  long long outputs() const override { return key_.m * key_.n * key_.batch; }
  std::span<const TrialShape> trial_shapes() const override;
  double trial_beta(const TrialShape& t) const override { return key_.beta_zero ? 0.0 : t.beta; }
  void fill(int s, std::uint64_t seed, const TrialShape& t) override;
  void compute_reference(int s) override;
  // c <- c_init for set s (a D2D copy of the whole guarded block).
  void restore_output(int s) override;
  void save_output(int s) override;
  RunFindings check_output(int s, CompareWith with) override;
  // Figures of a comparison: max_rel as measured, norm_rel = sqrt(sum_sq_err / ref sum_sq).
  ErrorFigures figures(const CompareStats& c) const override;
  ErrorFigures baseline_figures(int s) override;
  void run_baseline(int s) override;
  KernelArgs args(int s) const override;
  Tolerance tolerance(double factor) const override;
  double floor_us(const Roofline& r) const override;
  // Writes more than the L2 holds, so the next run starts cold.
  void flush_l2() override;
  // Observed SM clock in MHz (runs a 200 us probe).
  int probe_sm_clock_mhz() override;
  bool serving_output_checkable() const override { return key_.beta_zero; }
  ServingShape serving_shape(std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) const override;
  void make_serving_copies(int s, const ServingShape& shape) override { make_weight_copies(s, shape); }
  KernelArgs serving_args(int s, int call) const override;
  void serving_baseline(int s, int call) override;
  void serving_stream_read(int s, int call) override;

  // For a candidate whose first launch is a programmatic dependent: saves set s's A, B and bias
  // (whole guarded blocks), poisons their bodies and C's (all bits set: NaN in every dtype), then
  // queues the producer that writes them back, and C from its initial image, kLateInputsDelay
  // later (EvalKernels::late_copy). The candidate's launch must follow at once. Asynchronous.
  void queue_late_inputs(int s) override;

  // The serving regime (eval/serving_regime.hpp): `shape.copies` copies of set s's weight operand,
  // copy 0 being the set's own buffer; the others are made now (whole guarded blocks, so a copy's
  // body is at the same offset). Synchronous. Throws kd::Error when memory runs out.
  void make_weight_copies(int s, const ServingShape& shape);
  // Body of weight copy i (i < copies); the other operand is the set's own.
  CUdeviceptr weight_copy(int i) const;
  // Where streaming reads leave their (never written) sink.
  CUdeviceptr stream_sink() const;

private:
  kd_gemm_args gemm_args(int s) const;
  GemmOperands vendor_operands(int s, int call) const;
  std::uint64_t checksum(const GuardedBuffer& b);
  CompareStats compare(const DeviceMatrix& out, CUdeviceptr other, double floor);

  GemmKey key_;
  const EvalKernels& k_;
  VendorBaseline vendor_;
  ServingShape serving_;  // of the last make_weight_copies
  CUstream stream_;
  std::array<OperandSet, kSets> sets_;
  GuardedBuffer vendor_c_, saved_c_, workspace_;
  ProblemScratch scratch_;
  DeviceBuffer ref_;
  DeviceBuffer stash_a_, stash_b_, stash_bias_;  // queue_late_inputs, made on first use
  std::vector<DeviceBuffer> weight_copies_;      // copies 1.. of make_weight_copies
  CUdeviceptr weight_copy0_ = 0;
  std::uint64_t workspace_bytes_ = 0;
  double ref_sum_sq_ = 0.0;
};

}  // namespace kd::eval
