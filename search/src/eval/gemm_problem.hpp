// The device-side problem for one key: two operand sets (rotated, so a kernel that caches by
// address is caught; each set is also refilled in place with new data, so one that caches by
// content of the first call is caught), the vendor's output, the fp64 reference, a workspace and
// scratch for results. Every output and workspace sits inside guard bands.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "eval/device_memory.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/serving_regime.hpp"
#include "eval/verdict.hpp"
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

// Findings of one run's checks, before judging.
struct RunFindings {
  GuardStats c_guards, workspace_guards;
  bool inputs_changed = false;
  std::string changed_inputs;  // "A, bias"
  CompareStats compare;
};

class GemmProblem {
public:
  // Allocates everything for `key`; throws kd::Error (cuda) when memory runs out.
  GemmProblem(const GemmKey& key, std::uint64_t workspace_bytes, const EvalKernels& kernels,
              CUstream stream, std::uint64_t l2_bytes);

  static constexpr int kSets = 2;
  OperandSet& set(int s) { return sets_[static_cast<std::size_t>(s)]; }
  const GemmKey& key() const { return key_; }

  // Fills set s with fresh inputs (and C when beta != 0; NaN poison in C when beta == 0) and
  // records their checksums. Synchronous.
  void fill(int s, std::uint64_t seed, Distribution dist, double scale, double alpha, double beta);
  // Computes the fp64 reference of set s into the reference buffer; sets its floor. Synchronous.
  void compute_reference(int s);
  // c <- c_init for set s (a D2D copy of the whole guarded block). Asynchronous.
  void restore_output(int s);
  // vendor_c <- c_init of set s.
  void restore_vendor_output(int s);
  // Keeps a copy of set s's output for the agreement check.
  void save_output(int s);

  CUdeviceptr workspace() const;   // 0 when the plan asks for none
  CUdeviceptr vendor_output() const { return vendor_c_.body(); }

  // Guards, input checksums and comparison with the reference (or, with `against_saved`, with the
  // saved output). Synchronous.
  enum class CompareWith { reference, saved_output };
  RunFindings check_output(int s, CompareWith with);
  // The vendor output against the reference. Synchronous.
  ErrorFigures vendor_error(int s);
  // Writes more than the L2 holds, so the next run starts cold. Asynchronous.
  void flush_l2();
  // Observed SM clock in MHz (runs a 200 us probe). Synchronous.
  int probe_sm_clock_mhz();

  // Figures of a comparison: max_rel as measured, norm_rel = sqrt(sum_sq_err / ref sum_sq).
  ErrorFigures figures(const CompareStats& c) const;

  // For a candidate whose first launch is a programmatic dependent: saves set s's A, B and bias
  // (whole guarded blocks), poisons their bodies and C's (all bits set: NaN in every dtype), then
  // queues the producer that writes them back, and C from its initial image, kLateInputsDelay
  // later (EvalKernels::late_copy). The candidate's launch must follow at once. Asynchronous.
  void queue_late_inputs(int s);
  static constexpr long long kLateInputsDelayNs = 50'000;

  // The serving regime (eval/serving_regime.hpp): `shape.copies` copies of set s's weight operand,
  // copy 0 being the set's own buffer; the others are made now (whole guarded blocks, so a copy's
  // body is at the same offset). Synchronous. Throws kd::Error when memory runs out.
  void make_weight_copies(int s, const ServingShape& shape);
  // Body of weight copy i (i < copies); the other operand is the set's own.
  CUdeviceptr weight_copy(int i) const;
  // Where streaming reads leave their (never written) sink.
  CUdeviceptr stream_sink() const;

private:
  std::uint64_t checksum(const GuardedBuffer& b);
  CompareStats compare(const DeviceMatrix& out, CUdeviceptr other, double floor);

  GemmKey key_;
  const EvalKernels& k_;
  CUstream stream_;
  std::array<OperandSet, kSets> sets_;
  GuardedBuffer vendor_c_, saved_c_, workspace_;
  DeviceBuffer ref_, scratch_, flush_;
  DeviceBuffer stash_a_, stash_b_, stash_bias_;  // queue_late_inputs, made on first use
  std::vector<DeviceBuffer> weight_copies_;      // copies 1.. of make_weight_copies
  CUdeviceptr weight_copy0_ = 0;
  std::uint64_t workspace_bytes_ = 0;
  double ref_sum_sq_ = 0.0;
};

}  // namespace kd::eval
