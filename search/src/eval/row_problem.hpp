// The gate's operator interface (eval/gate_problem.hpp) for a row operator (key/row_shape.hpp:
// rmsnorm, layernorm, softmax over contiguous rows). The fp64 reference and the baseline are the
// evaluator's own kernels (eval_kernels_source.cpp, kd_row_reference and kd_row_baseline): the
// baseline computes what a framework's row kernel computes, in f32, and stands in for the
// framework's kernel until a worker can time that one in the same run (issue 33).
//
// The trials add a fifth distribution to GEMM's four: rows of mean 1000 and std 0.1, where a
// single-pass variance (E[x^2] - E[x]^2 in f32) loses every significant bit. Weight is drawn around
// 1 (1 + 0.5 normal) and bias as a normal, both at the x's dtype. The serving regime rotates copies
// of x: a norm or softmax reads the activations the previous layer wrote, which at the sizes where
// its time matters no longer sit in the L2.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "eval/device_memory.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/gate_problem.hpp"
#include "eval/problem_scratch.hpp"
#include "kdispatch/rowop.cuh"
#include "key/row_shape.hpp"

namespace kd::eval {

// The eps every trial passes (torch's layer_norm default); the contract takes it per call.
inline constexpr double kRowGateEps = 1e-5;

// Bytes a row operator must move at least: x read and y written once, weight and bias read once.
std::uint64_t row_min_bytes(const RowShape& shape);

// factor as given; floors of 4 units of roundoff of the output type plus 2 sqrt(cols) units of
// f32 (the reductions' spread under any summation order), as GEMM's with k = cols.
Tolerance row_tolerance(const RowShape& shape, double factor);

class RowProblem final : public GateProblem {
public:
  // Allocates everything for `shape`; throws kd::Error (cuda) when memory runs out.
  RowProblem(const RowShape& shape, std::uint64_t workspace_bytes, const EvalKernels& kernels, CUstream stream,
             std::uint64_t l2_bytes, int device_ordinal);

  std::string shape_line() const override;
  long long outputs() const override { return shape_.rows * shape_.cols; }
  std::span<const TrialShape> trial_shapes() const override;
  double trial_beta(const TrialShape&) const override { return 0.0; }
  void fill(int s, std::uint64_t seed, const TrialShape& t) override;
  void compute_reference(int s) override;
  void restore_output(int s) override;
  void save_output(int s) override;
  RunFindings check_output(int s, CompareWith with) override;
  ErrorFigures figures(const CompareStats& c) const override;
  ErrorFigures baseline_figures(int s) override;
  void run_baseline(int s) override;
  void queue_late_inputs(int s) override;
  KernelArgs args(int s) const override;
  Tolerance tolerance(double factor) const override { return row_tolerance(shape_, factor); }
  double floor_us(const Roofline& r) const override;
  void flush_l2() override;
  int probe_sm_clock_mhz() override;
  bool serving_output_checkable() const override { return true; }
  ServingShape serving_shape(std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) const override;
  void make_serving_copies(int s, const ServingShape& shape) override;
  KernelArgs serving_args(int s, int call) const override;
  void serving_baseline(int s, int call) override;
  void serving_stream_read(int s, int call) override;
  // PyTorch's kernel for the key (eval/framework_baseline.hpp), timed beside the evaluator.
  std::variant<std::monostate, ExternalBaseline, std::string> external_baseline() override;

private:
  struct Set {
    GuardedBuffer x, w, b, y;
    std::uint64_t sum_x = 0, sum_w = 0, sum_b = 0;
    double floor = 1e-30;
  };
  // The tensor as the evaluator's kernels see it: cols x rows column-major (row r at r * cols).
  DeviceMatrix tensor(CUdeviceptr p) const;
  DeviceMatrix vector(CUdeviceptr p) const;  // weight, bias: cols elements
  kd_row_args row_args(int s, CUdeviceptr x) const;
  RowRefArgs ref_args(int s, CUdeviceptr x, CUdeviceptr y) const;
  std::uint64_t checksum(const GuardedBuffer& b);
  CompareStats compare(CUdeviceptr out, CUdeviceptr other, double floor);
  CUdeviceptr x_copy(int s, int call) const;

  RowShape shape_;
  const EvalKernels& k_;
  CUstream stream_;
  std::array<Set, kSets> sets_;
  GuardedBuffer baseline_y_, saved_y_, workspace_;
  ProblemScratch scratch_;
  DeviceBuffer ref_;
  DeviceBuffer stash_x_, stash_w_, stash_b_;
  std::vector<DeviceBuffer> x_copies_;
  ServingShape serving_;
  std::uint64_t workspace_bytes_ = 0;
  double ref_sum_sq_ = 0.0;
  int device_ordinal_ = 0;
};

}  // namespace kd::eval
