#include "eval/evaluator.hpp"

#include <array>
#include <optional>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "eval/candidate.hpp"
#include "eval/cublaslt_candidate.hpp"
#include "eval/error_criterion.hpp"
#include "eval/gate.hpp"
#include "eval/gemm_problem.hpp"
#include "eval/row_problem.hpp"
#include "key/row_key.hpp"
#include "eval/roofline_measure.hpp"

namespace kd::eval {
namespace {

// A loaded kernel or a made cuBLASLt candidate, as the gate takes it.
template <class Made>
std::variant<std::unique_ptr<GateCandidate>, CandidateError> as_gate_candidate(Made made) {
  if (auto* e = std::get_if<CandidateError>(&made)) return std::move(*e);
  return std::unique_ptr<GateCandidate>(std::move(std::get<0>(made)));
}

}  // namespace

struct Evaluator::Impl {
  EvaluatorConfig config;
  DeviceInfo info;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::unique_ptr<EvalKernels> kernels;
  Roofline roofline;
  bool context_lost = false;

  ~Impl() {
    kernels.reset();
    if (stream != nullptr) cu().cuStreamDestroy(stream);
    if (context != nullptr) cu().cuDevicePrimaryCtxRelease(device);
  }

  void ensure_peak(const GemmKey& key) {
    if (config.roofline_override) return;
    const std::string cls = peak_class(key);
    if (roofline.peak_flops_per_s.count(cls) != 0) return;
    roofline.peak_flops_per_s[cls] = measure_peak_flops(cls, stream, *kernels);
    if (!config.roofline_dir.empty()) save_roofline(config.roofline_dir, roofline);
  }

  // The key of a request, or why this evaluator cannot take it (key_invalid's detail).
  std::variant<GemmKey, std::string> usable_key(const std::string& line) const {
    const auto parsed = parse_key(line);
    if (const KeyError* e = std::get_if<KeyError>(&parsed)) return e->message;
    const GemmKey& key = std::get<GemmKey>(parsed);
    // One evaluation is one shape: a range (issue 29) is gated point by point by its search.
    if (key.is_range())
      return fmt::format("n={}..{} is a range: evaluate one n of it (its search checks each point)", key.n, key.n_hi);
    if (key.device && key.device->arch != info.arch)
      return fmt::format("key is for {}, this device is {}", key.device->arch, info.arch);
    if (key.batch > 1 && key.stride_c < key.ldc * key.n) return std::string("output batches overlap (stride_c < ldc * n)");
    return key;
  }

  // Any operator's key (key/row_key.hpp, OpKey): a GEMM as usable_key says, a row operator when it
  // is for this device's arch.
  std::variant<OpKey, std::string> usable_op_key(const std::string& line) const {
    const auto parsed = parse_op_key(line);
    if (const KeyError* e = std::get_if<KeyError>(&parsed)) return e->message;
    const OpKey& op = std::get<OpKey>(parsed);
    if (std::holds_alternative<GemmKey>(op)) {
      auto gemm = usable_key(line);
      if (auto* why = std::get_if<std::string>(&gemm)) return std::move(*why);
      return OpKey(std::move(std::get<GemmKey>(gemm)));
    }
    const RowKey& row = std::get<RowKey>(op);
    if (row.device && row.device->arch != info.arch)
      return fmt::format("key is for {}, this device is {}", row.device->arch, info.arch);
    return op;
  }

  // After a CUDA error: is the context still usable? A trap or an illegal address leaves a
  // sticky error that every later call returns.
  bool probe_context_lost() {
    if (cu().cuCtxSynchronize() != CUDA_SUCCESS) context_lost = true;
    return context_lost;
  }
};

Evaluator::Evaluator(EvaluatorConfig config) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.config = std::move(config);
  const CudaDriver& d = cu();
  im.info = query_device(im.config.device_ordinal);
  const std::string what = fmt::format("device {}", im.config.device_ordinal);
  KD_CU_CHECK(d.cuDeviceGet(&im.device, im.config.device_ordinal), what);
  KD_CU_CHECK(d.cuDevicePrimaryCtxRetain(&im.context, im.device), what);
  KD_CU_CHECK(d.cuCtxSetCurrent(im.context), what);
  KD_CU_CHECK(d.cuStreamCreate(&im.stream, CU_STREAM_NON_BLOCKING), "evaluator stream");
  im.kernels = std::make_unique<EvalKernels>(im.info.arch);
  const std::string gpu = fmt::format("{} {} {}sm", im.info.name, im.info.arch, im.info.sms);
  if (im.config.roofline_override) {
    im.roofline = *im.config.roofline_override;
    return;
  }
  if (!im.config.roofline_dir.empty()) {
    if (std::optional<Roofline> r = load_roofline(im.config.roofline_dir, gpu)) {
      im.roofline = *r;
      return;
    }
  }
  im.roofline.gpu = gpu;
  size_t free_bytes = 0, total_bytes = 0;
  KD_CU_CHECK(d.cuMemGetInfo(&free_bytes, &total_bytes), what);
  im.roofline.bandwidth_bytes_per_s = measure_copy_bandwidth(im.stream, free_bytes / 4);
  if (!im.config.roofline_dir.empty()) save_roofline(im.config.roofline_dir, im.roofline);
}

Evaluator::~Evaluator() = default;

bool Evaluator::context_usable() const noexcept { return !impl_->context_lost; }
const Roofline& Evaluator::roofline() const noexcept { return impl_->roofline; }
std::string Evaluator::device_arch() const { return impl_->info.arch; }
std::string Evaluator::device_name() const { return impl_->info.name; }

Verdict Evaluator::evaluate(const EvalRequest& request) {
  Impl& im = *impl_;
  const auto started = std::chrono::steady_clock::now();
  Verdict v;
  const auto finish = [&](Verdict out) {
    out.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  };
  if (im.context_lost) {
    v.rule = Rule::crashed;
    v.detail = "the evaluator's CUDA context was lost by an earlier candidate";
    return finish(std::move(v));
  }
  try {
    const auto usable = im.usable_op_key(request.key_line);
    if (const std::string* why = std::get_if<std::string>(&usable)) {
      v.rule = Rule::key_invalid;
      v.detail = *why;
      return finish(std::move(v));
    }
    const OpKey& op = std::get<OpKey>(usable);
    const GemmKey* gemm = std::get_if<GemmKey>(&op);
    if (request.cublaslt && gemm == nullptr) {
      v.rule = Rule::key_invalid;
      v.detail = "a cuBLASLt algorithm computes GEMMs only; this key is " + op_shape_line(op);
      return finish(std::move(v));
    }
    auto loaded = request.cublaslt
                      ? as_gate_candidate(CublasLtCandidate::make(*gemm, *request.cublaslt))
                      : as_gate_candidate(KernelCandidate::load(request.cubin, request.plan,
                                                                im.info.max_smem_per_block_optin_bytes));
    if (const CandidateError* e = std::get_if<CandidateError>(&loaded)) {
      v.rule = e->kind == CandidateError::Kind::load_failed ? Rule::load_failed : Rule::plan_invalid;
      v.detail = e->message;
      return finish(std::move(v));
    }
    if (gemm != nullptr && request.options.timing == Timing::measure) im.ensure_peak(*gemm);
    const GateCandidate& candidate = *std::get<std::unique_ptr<GateCandidate>>(loaded);
    const auto l2 = static_cast<std::uint64_t>(im.info.l2_bytes);
    GateContext ctx{request.options, *im.kernels, im.stream, im.roofline, l2};
    // Each operator's problem (eval/gate_problem.hpp); the gate is the same for all.
    std::unique_ptr<GateProblem> problem;
    if (gemm != nullptr)
      problem = std::make_unique<GemmProblem>(*gemm, candidate.workspace_bytes(), *im.kernels, im.stream, l2);
    else
      problem = std::make_unique<RowProblem>(std::get<RowKey>(op).shape(), candidate.workspace_bytes(), *im.kernels,
                                             im.stream, l2, im.config.device_ordinal);
    v = run_gate_and_timing(ctx, *problem, candidate);
    if (v.rule == Rule::crashed) im.probe_context_lost();
  } catch (const Error& e) {
    const bool lost = im.probe_context_lost();
    v.rule = lost ? Rule::crashed : Rule::internal_error;
    v.detail = e.what();
  } catch (const std::exception& e) {
    v.rule = im.probe_context_lost() ? Rule::crashed : Rule::internal_error;
    v.detail = e.what();
  }
  return finish(std::move(v));
}

std::variant<cublaslt::Enumeration, std::string> Evaluator::enumerate_cublaslt(
    const std::string& key_line, const cublaslt::EnumerationOptions& options) {
  Impl& im = *impl_;
  if (im.context_lost) return std::string("the evaluator's CUDA context was lost by an earlier candidate");
  try {
    const auto usable = im.usable_key(key_line);
    if (const std::string* why = std::get_if<std::string>(&usable)) return "key: " + *why;
    return cublaslt::enumerate_algos(std::get<GemmKey>(usable), options);
  } catch (const std::exception& e) {
    im.probe_context_lost();
    return std::string(e.what());
  }
}

Verdict Evaluator::evaluate_source(const std::string& key_line, const std::string& source,
                                   const EvalOptions& options) {
  const search::CompileOutput out =
      search::compile_cuda({.source = source, .name = "candidate.cu", .arch = impl_->info.arch});
  if (out.status != search::CompileStatus::ok) {
    Verdict v;
    v.rule = Rule::compile_failed;
    v.detail = out.log.substr(0, 4000);
    return v;
  }
  auto plan = parse_plan_from_source(source);
  if (const PlanError* e = std::get_if<PlanError>(&plan)) {
    Verdict v;
    v.rule = Rule::plan_invalid;
    v.detail = e->message;
    return v;
  }
  return evaluate({key_line, out.cubin, std::get<LaunchPlan>(plan), options});
}

}  // namespace kd::eval
