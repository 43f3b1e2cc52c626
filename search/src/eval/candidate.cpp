#include "eval/candidate.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "cuda/kernel_launch.hpp"

namespace kd::eval {

std::variant<std::unique_ptr<KernelCandidate>, CandidateError> KernelCandidate::load(
    const std::string& cubin, const LaunchPlan& plan, int max_smem_bytes) {
  using Kind = CandidateError::Kind;
  if (plan.launches.empty()) return CandidateError{Kind::plan_invalid, "plan has no launches"};
  std::unique_ptr<KernelCandidate> c(new KernelCandidate());
  c->plan_ = plan;
  c->cubin_ = cubin;  // NUL-terminated copy, see load_module
  c->max_smem_bytes_ = max_smem_bytes;
  CUmodule raw = nullptr;
  const CUresult rc = cu().cuModuleLoadData(&raw, c->cubin_.c_str());
  if (rc != CUDA_SUCCESS) return CandidateError{Kind::load_failed, cuda_error_name(rc)};
  c->module_ = Module(raw);
  for (const LaunchSpec& l : plan.launches) {
    CUfunction f = nullptr;
    if (cu().cuModuleGetFunction(&f, raw, l.entry.c_str()) != CUDA_SUCCESS) {
      return CandidateError{Kind::plan_invalid, fmt::format("entry '{}' is not in the cubin", l.entry)};
    }
    if (static_cast<long long>(l.smem_bytes) > max_smem_bytes) {
      return CandidateError{Kind::plan_invalid,
                            fmt::format("entry '{}' asks {} bytes of shared memory, the device has {}",
                                        l.entry, l.smem_bytes, max_smem_bytes)};
    }
    // Whenever the plan asks any: 48 KiB of dynamic memory is the default limit only for a kernel
    // with no static shared memory of its own, and a launch past the limit fails.
    if (l.smem_bytes > 0) {
      const CUresult a = cu().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 static_cast<int>(l.smem_bytes));
      if (a != CUDA_SUCCESS) {
        return CandidateError{Kind::plan_invalid, fmt::format("entry '{}': {} bytes of shared memory: {}",
                                                              l.entry, l.smem_bytes, cuda_error_name(a))};
      }
    }
    c->functions_.push_back(f);
  }
  return c;
}

std::optional<std::string> KernelCandidate::launch(const KernelArgs& args, CUstream stream) const {
  for (std::size_t i = 0; i < functions_.size(); ++i) {
    const LaunchSpec& l = plan_.launches[i];
    KernelArgs a = args;
    void* params[] = {a.bytes.data()};
    const CUresult rc = launch_kernel(cu(), functions_[i], l.grid, l.block, l.smem_bytes, stream, params, l.pdl);
    if (rc != CUDA_SUCCESS) return cuda_error_name(rc);
  }
  return std::nullopt;
}

std::unique_ptr<GateCandidate> KernelCandidate::fresh() const {
  auto again = load(cubin_, plan_, max_smem_bytes_);
  if (auto* c = std::get_if<std::unique_ptr<KernelCandidate>>(&again)) return std::move(*c);
  return nullptr;
}

}  // namespace kd::eval
