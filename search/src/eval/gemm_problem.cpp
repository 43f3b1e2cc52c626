#include "eval/gemm_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "eval/error_criterion.hpp"
#include "eval/problem_scratch.hpp"
#include "eval/roofline.hpp"

namespace kd::eval {
namespace {

int dtype_code(DType t) { return static_cast<int>(t); }  // 0 f16, 1 bf16, 2 f32, as in the kernels

DeviceMatrix bias_matrix(const GemmKey& key, CUdeviceptr p) {
  return {p, key.m, 1, key.m, 0, 1, dtype_code(key.c)};
}

// The trials cycle through these: value distributions (design.md) and scale factors.
constexpr std::array<TrialShape, 5> kGemmTrials{{
    {Distribution::normal, 1.0, "normal", 1.0, 1.0},
    {Distribution::uniform, 1.0, "uniform", 0.75, 0.5},
    {Distribution::scaled, 1e-2, "normal x 1e-2", 1.25, -1.0},
    {Distribution::scaled, 1e2, "normal x 1e2", 1.0, 0.25},
    {Distribution::offset_mean, 1.0, "offset mean", -0.5, 2.0},
}};

}  // namespace

DeviceMatrix matrix_a(const GemmKey& key, CUdeviceptr p) {
  const bool n = key.ta == Transpose::N;
  return {p, n ? key.m : key.k, n ? key.k : key.m, key.lda, key.stride_a,
          static_cast<int>(key.batch), dtype_code(key.a)};
}
DeviceMatrix matrix_b(const GemmKey& key, CUdeviceptr p) {
  const bool n = key.tb == Transpose::N;
  return {p, n ? key.k : key.n, n ? key.n : key.k, key.ldb, key.stride_b,
          static_cast<int>(key.batch), dtype_code(key.b)};
}
DeviceMatrix matrix_c(const GemmKey& key, CUdeviceptr p) {
  return {p, key.m, key.n, key.ldc, key.stride_c, static_cast<int>(key.batch), dtype_code(key.c)};
}

std::uint64_t span_bytes(const DeviceMatrix& x) {
  const long long elements = static_cast<long long>(x.batch - 1) * x.stride + (x.cols - 1) * x.ld + x.rows;
  return static_cast<std::uint64_t>(elements) * (x.dtype == 2 ? 4u : 2u);
}

GemmProblem::GemmProblem(const GemmKey& key, std::uint64_t workspace_bytes,
                         const EvalKernels& kernels, CUstream stream, std::uint64_t l2_bytes)
    : key_(key), k_(kernels), vendor_(key, stream), stream_(stream), scratch_(kernels, stream, l2_bytes),
      workspace_bytes_(workspace_bytes) {
  const std::uint64_t c_bytes = span_bytes(matrix_c(key, 0));
  for (int s = 0; s < kSets; ++s) {
    OperandSet& o = set(s);
    o.a = GuardedBuffer(span_bytes(matrix_a(key, 0)), fmt::format("A[{}]", s));
    o.b = GuardedBuffer(span_bytes(matrix_b(key, 0)), fmt::format("B[{}]", s));
    if (key.epilogue == Epilogue::bias)
      o.bias = GuardedBuffer(span_bytes(bias_matrix(key, 0)), fmt::format("bias[{}]", s));
    o.c = GuardedBuffer(c_bytes, fmt::format("C[{}]", s));
    o.c_init = GuardedBuffer(c_bytes, fmt::format("C init[{}]", s));
  }
  vendor_c_ = GuardedBuffer(c_bytes, "vendor C");
  saved_c_ = GuardedBuffer(c_bytes, "saved C");
  if (workspace_bytes > 0) {
    workspace_ = GuardedBuffer(workspace_bytes, "workspace");
    workspace_.fill_sentinel(stream_);
    // The contract does not zero the workspace: start it as NaN garbage, never reset it.
    KD_CU_CHECK(cu().cuMemsetD8Async(workspace_.body(), 0xFF, workspace_.body_bytes(), stream_),
                "workspace");
  }
  ref_ = DeviceBuffer(static_cast<std::uint64_t>(key.m * key.n * key.batch) * sizeof(double),
                      "fp64 reference");
}

void GemmProblem::fill(int s, std::uint64_t seed, Distribution dist, double scale, double alpha,
                       double beta) {
  OperandSet& o = set(s);
  o.seed = seed;
  o.dist = dist;
  o.scale = scale;
  o.alpha = alpha;
  o.beta = beta;
  // Scale only A, so that op(A)op(B) stays in f16's range; C and bias at the product's size.
  const Distribution b_dist = dist == Distribution::scaled ? Distribution::normal : dist;
  const double c_scale = scale * std::sqrt(static_cast<double>(key_.k));
  for (const GuardedBuffer* g : {&o.a, &o.b, &o.c_init}) g->fill_sentinel(stream_);
  k_.generate(stream_, matrix_a(key_, o.a.body()), operand_seed(seed, 1), dist, scale);
  k_.generate(stream_, matrix_b(key_, o.b.body()), operand_seed(seed, 2), b_dist, 1.0);
  if (key_.epilogue == Epilogue::bias) {
    o.bias.fill_sentinel(stream_);
    k_.generate(stream_, bias_matrix(key_, o.bias.body()), operand_seed(seed, 3), Distribution::normal,
                c_scale);
  }
  if (beta != 0.0) {
    k_.generate(stream_, matrix_c(key_, o.c_init.body()), operand_seed(seed, 4), Distribution::normal,
                c_scale);
  } else {
    k_.poison(stream_, matrix_c(key_, o.c_init.body()));
  }
  o.sum_a = checksum(o.a);
  o.sum_b = checksum(o.b);
  o.sum_bias = key_.epilogue == Epilogue::bias ? checksum(o.bias) : 0;
  o.sum_c_init = checksum(o.c_init);
}

void GemmProblem::compute_reference(int s) {
  OperandSet& o = set(s);
  RefArgs r;
  r.a = o.a.body();
  r.b = o.b.body();
  r.c0 = o.c_init.body();
  r.bias = key_.epilogue == Epilogue::bias ? o.bias.body() : 0;
  r.ref = ref_.get();
  r.m = key_.m;
  r.n = key_.n;
  r.k = key_.k;
  r.lda = key_.lda;
  r.ldb = key_.ldb;
  r.ldc = key_.ldc;
  r.stride_a = key_.stride_a;
  r.stride_b = key_.stride_b;
  r.stride_c = key_.stride_c;
  r.ta = key_.ta == Transpose::N ? 0 : 1;
  r.tb = key_.tb == Transpose::N ? 0 : 1;
  r.dt_a = dtype_code(key_.a);
  r.dt_b = dtype_code(key_.b);
  r.dt_c = dtype_code(key_.c);
  r.has_bias = key_.epilogue == Epilogue::bias ? 1 : 0;
  r.alpha = o.alpha;
  r.beta = o.beta;
  k_.reference(stream_, r, key_.batch);
  const long long count = key_.m * key_.n * key_.batch;
  const RefStats st = scratch_.ref_stats(ref_.get(), count);
  ref_sum_sq_ = st.sum_sq;
  o.floor = relative_floor(st.sum_sq, count);
}

void GemmProblem::restore_output(int s) {
  const OperandSet& o = set(s);
  KD_CU_CHECK(cu().cuMemcpyDtoDAsync(o.c.base(), o.c_init.base(), o.c.total_bytes(), stream_),
              "restore C");
}

void GemmProblem::restore_vendor_output(int s) {
  const OperandSet& o = set(s);
  KD_CU_CHECK(cu().cuMemcpyDtoDAsync(vendor_c_.base(), o.c_init.base(), vendor_c_.total_bytes(), stream_),
              "restore vendor C");
}

void GemmProblem::save_output(int s) {
  const OperandSet& o = set(s);
  KD_CU_CHECK(cu().cuMemcpyDtoDAsync(saved_c_.base(), o.c.base(), saved_c_.total_bytes(), stream_),
              "save C");
}

CUdeviceptr GemmProblem::workspace() const { return workspace_bytes_ > 0 ? workspace_.body() : 0; }

std::uint64_t GemmProblem::checksum(const GuardedBuffer& b) { return scratch_.checksum(b); }

CompareStats GemmProblem::compare(const DeviceMatrix& out, CUdeviceptr other, double floor) {
  return scratch_.compare(out, ref_.get(), other, floor);
}

RunFindings GemmProblem::check_output(int s, CompareWith with) {
  OperandSet& o = set(s);
  RunFindings f;
  f.c_guards = scratch_.guards(matrix_c(key_, o.c.body()), o.c.body_bytes());
  if (workspace_bytes_ > 0) f.workspace_guards = scratch_.workspace_guards(workspace_);
  const auto note = [&](bool changed, const char* name) {
    if (!changed) return;
    f.inputs_changed = true;
    f.changed_inputs += f.changed_inputs.empty() ? name : fmt::format(", {}", name);
  };
  note(checksum(o.a) != o.sum_a, "A");
  note(checksum(o.b) != o.sum_b, "B");
  if (key_.epilogue == Epilogue::bias) note(checksum(o.bias) != o.sum_bias, "bias");
  note(checksum(o.c_init) != o.sum_c_init, "initial C");
  f.compare = compare(matrix_c(key_, o.c.body()),
                      with == CompareWith::saved_output ? saved_c_.body() : 0, o.floor);
  return f;
}

ErrorFigures GemmProblem::vendor_error(int s) {
  const CompareStats c = compare(matrix_c(key_, vendor_c_.body()), 0, set(s).floor);
  if (c.poisoned != 0 || c.nonfinite != 0) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("the vendor library left {} unwritten and {} non-finite outputs for {}",
                            c.poisoned, c.nonfinite, key_.shape_line()));
  }
  return figures(c);
}

ErrorFigures GemmProblem::figures(const CompareStats& c) const {
  const double norm = ref_sum_sq_ > 0.0 ? std::sqrt(c.sum_sq_err / ref_sum_sq_)
                                        : (c.sum_sq_err > 0.0 ? INFINITY : 0.0);
  return {c.max_rel, norm, c.sum_abs_ref > 0.0 ? c.signed_err / c.sum_abs_ref : 0.0};
}

void GemmProblem::flush_l2() { scratch_.flush_l2(); }

void GemmProblem::queue_late_inputs(int s) {
  const OperandSet& o = set(s);
  std::array<EvalKernels::Copy, EvalKernels::kMaxLateCopies> copies{};
  int count = 0;
  copies[count++] = stash_for_late_copy(stash_a_, o.a, "late A", stream_);
  copies[count++] = stash_for_late_copy(stash_b_, o.b, "late B", stream_);
  if (key_.epilogue == Epilogue::bias) copies[count++] = stash_for_late_copy(stash_bias_, o.bias, "late bias", stream_);
  KD_CU_CHECK(cu().cuMemsetD8Async(o.c.body(), 0xFF, o.c.body_bytes(), stream_), "late C");
  copies[count++] = {o.c_init.base(), o.c.base(), o.c.total_bytes()};
  k_.late_copy(stream_, copies.data(), count, kLateInputsDelayNs);
}

void GemmProblem::make_weight_copies(int s, const ServingShape& shape) {
  const OperandSet& o = set(s);
  const GuardedBuffer& w = shape.weight == WeightOperand::a ? o.a : o.b;
  serving_ = shape;
  weight_copy0_ = w.body();
  weight_copies_.clear();
  for (int i = 1; i < shape.copies; ++i) {
    DeviceBuffer copy(w.total_bytes(), fmt::format("weight copy {}", i));
    KD_CU_CHECK(cu().cuMemcpyDtoDAsync(copy.get(), w.base(), w.total_bytes(), stream_), "weight copy");
    weight_copies_.push_back(std::move(copy));
  }
  KD_CU_CHECK(cu().cuStreamSynchronize(stream_), "weight copies");
}

CUdeviceptr GemmProblem::weight_copy(int i) const {
  if (i == 0) return weight_copy0_;
  return weight_copies_.at(static_cast<std::size_t>(i - 1)).get() + kGuardBytes;
}

CUdeviceptr GemmProblem::stream_sink() const { return scratch_.stream_sink(); }

std::span<const TrialShape> GemmProblem::trial_shapes() const { return kGemmTrials; }

void GemmProblem::fill(int s, std::uint64_t seed, const TrialShape& t) {
  fill(s, seed, t.dist, t.scale, t.alpha, trial_beta(t));
}

kd_gemm_args GemmProblem::gemm_args(int s) const {
  const OperandSet& o = set(s);
  const GemmKey& k = key_;
  kd_gemm_args a{};
  a.a = reinterpret_cast<const void*>(o.a.body());
  a.b = reinterpret_cast<const void*>(o.b.body());
  a.c = reinterpret_cast<void*>(o.c.body());
  a.workspace = reinterpret_cast<void*>(workspace());
  a.m = k.m;
  a.n = k.n;
  a.k = k.k;
  a.lda = k.lda;
  a.ldb = k.ldb;
  a.ldc = k.ldc;
  a.stride_a = k.batch > 1 ? k.stride_a : 0;
  a.stride_b = k.batch > 1 ? k.stride_b : 0;
  a.stride_c = k.batch > 1 ? k.stride_c : 0;
  a.batch = static_cast<int>(k.batch);
  a.alpha = static_cast<float>(o.alpha);
  a.beta = static_cast<float>(o.beta);
  a.bias = k.epilogue == Epilogue::bias ? reinterpret_cast<const void*>(o.bias.body()) : nullptr;
  return a;
}

KernelArgs GemmProblem::args(int s) const { return KernelArgs::of(gemm_args(s)); }

ErrorFigures GemmProblem::baseline_figures(int s) {
  restore_vendor_output(s);
  run_baseline(s);
  return vendor_error(s);
}

// The vendor's call on set s, or (call >= 0) on weight copy `call` of the serving regime.
GemmOperands GemmProblem::vendor_operands(int s, int call) const {
  const OperandSet& o = set(s);
  GemmOperands ops{o.a.body(), o.b.body(), vendor_output(), key_.epilogue == Epilogue::bias ? o.bias.body() : 0};
  if (call >= 0) (serving_.weight == WeightOperand::a ? ops.a : ops.b) = weight_copy(call % serving_.copies);
  return ops;
}

void GemmProblem::run_baseline(int s) { vendor_.run(vendor_operands(s, -1), set(s).alpha, set(s).beta); }

Tolerance GemmProblem::tolerance(double factor) const { return tolerance_for(key_, factor); }

double GemmProblem::floor_us(const Roofline& r) const { return roofline_floor_s(key_, r, 1.0) * 1e6; }

ServingShape GemmProblem::serving_shape(std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) const {
  return eval::serving_shape(key_, l2_bytes, floor_us, budget_bytes);
}

KernelArgs GemmProblem::serving_args(int s, int call) const {
  kd_gemm_args a = gemm_args(s);
  const auto w = reinterpret_cast<const void*>(weight_copy(call % serving_.copies));
  (serving_.weight == WeightOperand::a ? a.a : a.b) = w;
  return KernelArgs::of(a);
}

void GemmProblem::serving_baseline(int s, int call) { vendor_.run(vendor_operands(s, call), set(s).alpha, set(s).beta); }

// The inputs a call reads: its weight copy and the other operand, each from its first element.
void GemmProblem::serving_stream_read(int s, int call) {
  const OperandSet& o = set(s);
  const bool weight_a = serving_.weight == WeightOperand::a;
  const std::uint64_t other = weight_a ? span_bytes(matrix_b(key_, 0)) : span_bytes(matrix_a(key_, 0));
  const CUdeviceptr other_ptr = weight_a ? o.b.body() : o.a.body();
  k_.stream_read(stream_, weight_copy(call % serving_.copies), round_up(serving_.weight_bytes, 16), other_ptr,
                 round_up(other, 16), stream_sink());
}

int GemmProblem::probe_sm_clock_mhz() { return scratch_.probe_sm_clock_mhz(); }

}  // namespace kd::eval
