#include "eval/row_problem.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "eval/framework_baseline.hpp"
#include "eval/problem_scratch.hpp"
#include "eval/timing_stats.hpp"
#include "key/row_key.hpp"

namespace kd::eval {
namespace {

int dtype_code(DType t) { return static_cast<int>(t); }  // 0 f16, 1 bf16, 2 f32, as in the kernels

// GEMM's four distributions and the large mean. alpha and beta are unused.
constexpr std::array<TrialShape, 5> kRowTrials{{
    {Distribution::normal, 1.0, "normal", 1.0, 0.0},
    {Distribution::uniform, 1.0, "uniform", 1.0, 0.0},
    {Distribution::scaled, 1e-2, "normal x 1e-2", 1.0, 0.0},
    {Distribution::scaled, 1e2, "normal x 1e2", 1.0, 0.0},
    {Distribution::large_mean, 1.0, "mean 1000, std 0.1", 1.0, 0.0},
}};

int op_code(RowOp op) { return static_cast<int>(op); }  // 0 rmsnorm, 1 layernorm, 2 softmax

}  // namespace

std::uint64_t row_min_bytes(const RowShape& shape) { return static_cast<std::uint64_t>(min_bytes(shape)); }

Tolerance row_tolerance(const RowShape& shape, double factor) {
  const double floor = 4.0 * unit_roundoff(shape.dtype) +
                       2.0 * std::sqrt(static_cast<double>(shape.cols)) * unit_roundoff(DType::f32);
  return {factor, floor, floor};
}

RowProblem::RowProblem(const RowShape& shape, std::uint64_t workspace_bytes, const EvalKernels& kernels,
                       CUstream stream, std::uint64_t l2_bytes, int device_ordinal)
    : shape_(shape), k_(kernels), stream_(stream), scratch_(kernels, stream, l2_bytes), workspace_bytes_(workspace_bytes),
      device_ordinal_(device_ordinal) {
  const std::uint64_t elem = dtype_bytes(shape.dtype);
  const std::uint64_t tensor_bytes = static_cast<std::uint64_t>(shape.rows * shape.cols) * elem;
  const std::uint64_t vector_bytes = static_cast<std::uint64_t>(shape.cols) * elem;
  for (int s = 0; s < kSets; ++s) {
    Set& o = sets_[static_cast<std::size_t>(s)];
    o.x = GuardedBuffer(tensor_bytes, fmt::format("x[{}]", s));
    o.y = GuardedBuffer(tensor_bytes, fmt::format("y[{}]", s));
    if (shape.weight) o.w = GuardedBuffer(vector_bytes, fmt::format("weight[{}]", s));
    if (shape.bias) o.b = GuardedBuffer(vector_bytes, fmt::format("bias[{}]", s));
  }
  baseline_y_ = GuardedBuffer(tensor_bytes, "baseline y");
  saved_y_ = GuardedBuffer(tensor_bytes, "saved y");
  if (workspace_bytes > 0) {
    workspace_ = GuardedBuffer(workspace_bytes, "workspace");
    workspace_.fill_sentinel(stream_);
    // The contract does not zero the workspace: start it as NaN garbage, never reset it.
    KD_CU_CHECK(cu().cuMemsetD8Async(workspace_.body(), 0xFF, workspace_.body_bytes(), stream_), "workspace");
  }
  ref_ = DeviceBuffer(static_cast<std::uint64_t>(shape.rows * shape.cols) * sizeof(double), "fp64 reference");
}

std::string RowProblem::shape_line() const {
  RowKey k;
  static_cast<RowShape&>(k) = shape_;
  return k.shape_line();
}

std::span<const TrialShape> RowProblem::trial_shapes() const { return kRowTrials; }

DeviceMatrix RowProblem::tensor(CUdeviceptr p) const {
  return {p, shape_.cols, shape_.rows, shape_.cols, 0, 1, dtype_code(shape_.dtype)};
}
DeviceMatrix RowProblem::vector(CUdeviceptr p) const {
  return {p, shape_.cols, 1, shape_.cols, 0, 1, dtype_code(shape_.dtype)};
}

std::uint64_t RowProblem::checksum(const GuardedBuffer& b) { return scratch_.checksum(b); }

void RowProblem::fill(int s, std::uint64_t seed, const TrialShape& t) {
  Set& o = sets_[static_cast<std::size_t>(s)];
  for (const GuardedBuffer* g : {&o.x, &o.y}) g->fill_sentinel(stream_);
  k_.generate(stream_, tensor(o.x.body()), operand_seed(seed, 1), t.dist, t.scale);
  if (shape_.weight) {
    o.w.fill_sentinel(stream_);
    k_.generate(stream_, vector(o.w.body()), operand_seed(seed, 2), Distribution::offset_mean, 1.0);
  }
  if (shape_.bias) {
    o.b.fill_sentinel(stream_);
    k_.generate(stream_, vector(o.b.body()), operand_seed(seed, 3), Distribution::normal, 1.0);
  }
  o.sum_x = checksum(o.x);
  o.sum_w = shape_.weight ? checksum(o.w) : 0;
  o.sum_b = shape_.bias ? checksum(o.b) : 0;
}

RowRefArgs RowProblem::ref_args(int s, CUdeviceptr x, CUdeviceptr y) const {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  RowRefArgs r;
  r.x = x;
  r.w = shape_.weight ? o.w.body() : 0;
  r.b = shape_.bias ? o.b.body() : 0;
  r.y = y;
  r.ref = ref_.get();
  r.rows = shape_.rows;
  r.cols = shape_.cols;
  r.op = op_code(shape_.op);
  r.dtype = dtype_code(shape_.dtype);
  r.has_w = shape_.weight ? 1 : 0;
  r.has_b = shape_.bias ? 1 : 0;
  r.eps = kRowGateEps;
  return r;
}

void RowProblem::compute_reference(int s) {
  Set& o = sets_[static_cast<std::size_t>(s)];
  k_.row_reference(stream_, ref_args(s, o.x.body(), 0));
  const long long count = outputs();
  const RefStats st = scratch_.ref_stats(ref_.get(), count);
  ref_sum_sq_ = st.sum_sq;
  o.floor = relative_floor(st.sum_sq, count);
}

// y's initial image is NaN poison: the contract has no beta, every element must be written.
void RowProblem::restore_output(int s) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  k_.poison(stream_, tensor(o.y.body()));
}

void RowProblem::save_output(int s) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  KD_CU_CHECK(cu().cuMemcpyDtoDAsync(saved_y_.base(), o.y.base(), saved_y_.total_bytes(), stream_), "save y");
}

CompareStats RowProblem::compare(CUdeviceptr out, CUdeviceptr other, double floor) {
  return scratch_.compare(tensor(out), ref_.get(), other, floor);
}

RunFindings RowProblem::check_output(int s, CompareWith with) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  RunFindings f;
  f.c_guards = scratch_.guards(tensor(o.y.body()), o.y.body_bytes());
  if (workspace_bytes_ > 0) f.workspace_guards = scratch_.workspace_guards(workspace_);
  const auto note = [&](bool changed, const char* name) {
    if (!changed) return;
    f.inputs_changed = true;
    f.changed_inputs += f.changed_inputs.empty() ? name : fmt::format(", {}", name);
  };
  note(checksum(o.x) != o.sum_x, "x");
  if (shape_.weight) note(checksum(o.w) != o.sum_w, "weight");
  if (shape_.bias) note(checksum(o.b) != o.sum_b, "bias");
  f.compare = compare(o.y.body(), with == CompareWith::saved_output ? saved_y_.body() : 0, o.floor);
  return f;
}

ErrorFigures RowProblem::figures(const CompareStats& c) const {
  const double norm =
      ref_sum_sq_ > 0.0 ? std::sqrt(c.sum_sq_err / ref_sum_sq_) : (c.sum_sq_err > 0.0 ? INFINITY : 0.0);
  return {c.max_rel, norm, c.sum_abs_ref > 0.0 ? c.signed_err / c.sum_abs_ref : 0.0};
}

void RowProblem::run_baseline(int s) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  k_.row_baseline(stream_, ref_args(s, o.x.body(), baseline_y_.body()));
}

ErrorFigures RowProblem::baseline_figures(int s) {
  k_.poison(stream_, tensor(baseline_y_.body()));
  run_baseline(s);
  const CompareStats c = compare(baseline_y_.body(), 0, sets_[static_cast<std::size_t>(s)].floor);
  if (c.poisoned != 0 || c.nonfinite != 0) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("the baseline left {} unwritten and {} non-finite outputs for {}", c.poisoned,
                            c.nonfinite, shape_line()));
  }
  return figures(c);
}

kd_row_args RowProblem::row_args(int s, CUdeviceptr x) const {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  kd_row_args a{};
  a.x = reinterpret_cast<const void*>(x);
  a.weight = shape_.weight ? reinterpret_cast<const void*>(o.w.body()) : nullptr;
  a.bias = shape_.bias ? reinterpret_cast<const void*>(o.b.body()) : nullptr;
  a.y = reinterpret_cast<void*>(o.y.body());
  a.workspace = workspace_bytes_ > 0 ? reinterpret_cast<void*>(workspace_.body()) : nullptr;
  a.rows = shape_.rows;
  a.cols = shape_.cols;
  a.eps = static_cast<float>(kRowGateEps);
  return a;
}

KernelArgs RowProblem::args(int s) const {
  return KernelArgs::of(row_args(s, sets_[static_cast<std::size_t>(s)].x.body()));
}

void RowProblem::queue_late_inputs(int s) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  std::array<EvalKernels::Copy, EvalKernels::kMaxLateCopies> copies{};
  int count = 0;
  copies[count++] = stash_for_late_copy(stash_x_, o.x, "late x", stream_);
  if (shape_.weight) copies[count++] = stash_for_late_copy(stash_w_, o.w, "late weight", stream_);
  if (shape_.bias) copies[count++] = stash_for_late_copy(stash_b_, o.b, "late bias", stream_);
  k_.late_copy(stream_, copies.data(), count, kLateInputsDelayNs);
}

double RowProblem::floor_us(const Roofline& r) const {
  if (r.bandwidth_bytes_per_s <= 0.0) return 0.0;
  return static_cast<double>(row_min_bytes(shape_)) / r.bandwidth_bytes_per_s * 1e6;
}

void RowProblem::flush_l2() { scratch_.flush_l2(); }

int RowProblem::probe_sm_clock_mhz() { return scratch_.probe_sm_clock_mhz(); }

ServingShape RowProblem::serving_shape(std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) const {
  const std::uint64_t x_bytes = static_cast<std::uint64_t>(shape_.rows * shape_.cols) * dtype_bytes(shape_.dtype);
  return size_serving(WeightOperand::a, x_bytes, l2_bytes, floor_us, budget_bytes);
}

void RowProblem::make_serving_copies(int s, const ServingShape& shape) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  serving_ = shape;
  x_copies_.clear();
  for (int i = 1; i < shape.copies; ++i) {
    DeviceBuffer copy(o.x.total_bytes(), fmt::format("x copy {}", i));
    KD_CU_CHECK(cu().cuMemcpyDtoDAsync(copy.get(), o.x.base(), o.x.total_bytes(), stream_), "x copy");
    x_copies_.push_back(std::move(copy));
  }
  KD_CU_CHECK(cu().cuStreamSynchronize(stream_), "x copies");
}

CUdeviceptr RowProblem::x_copy(int s, int call) const {
  const int i = call % std::max(serving_.copies, 1);
  if (i == 0) return sets_[static_cast<std::size_t>(s)].x.body();
  return x_copies_.at(static_cast<std::size_t>(i - 1)).get() + kGuardBytes;
}

KernelArgs RowProblem::serving_args(int s, int call) const { return KernelArgs::of(row_args(s, x_copy(s, call))); }

void RowProblem::serving_baseline(int s, int call) {
  k_.row_baseline(stream_, ref_args(s, x_copy(s, call), baseline_y_.body()));
}

void RowProblem::serving_stream_read(int s, int call) {
  const Set& o = sets_[static_cast<std::size_t>(s)];
  const std::uint64_t x_bytes = round_up(serving_.weight_bytes, 16);
  const std::uint64_t w_bytes = shape_.weight ? round_up(static_cast<std::uint64_t>(shape_.cols) * dtype_bytes(shape_.dtype), 16) : 0;
  k_.stream_read(stream_, x_copy(s, call), x_bytes, shape_.weight ? o.w.body() : o.x.body(), w_bytes,
                 scratch_.stream_sink());
}

}  // namespace kd::eval

namespace kd::eval {

std::variant<std::monostate, ExternalBaseline, std::string> RowProblem::external_baseline() {
  auto times = framework_times(shape_, device_ordinal_);
  if (auto* why = std::get_if<std::string>(&times)) return std::move(*why);
  FrameworkTimes& t = std::get<FrameworkTimes>(times);
  return ExternalBaseline{t.name, summarize(t.serving_us), summarize(t.isolated_us)};
}

}  // namespace kd::eval
