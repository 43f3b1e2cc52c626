// A candidate loaded for evaluation: its module, the functions its plan names, and launching the
// plan with the kernel contract's argument struct.
#pragma once

#include <cuda.h>

#include <string>
#include <variant>
#include <vector>

#include "eval/eval_kernels.hpp"
#include "kdispatch/gemm.cuh"
#include "plan/launch_plan.hpp"

namespace kd::eval {

struct CandidateError {
  enum class Kind { load_failed, plan_invalid } kind;
  std::string message;
};

class LoadedCandidate {
public:
  // Loads `cubin` and resolves every launch's entry; sets the dynamic shared memory attribute
  // where a launch needs more than 48 KiB. `max_smem_bytes` is the device's opt-in limit.
  static std::variant<LoadedCandidate, CandidateError> load(const std::string& cubin,
                                                            const LaunchPlan& plan,
                                                            int max_smem_bytes);

  // Enqueues every launch of the plan on `stream`; returns the first launch's error (a refused
  // launch), CUDA_SUCCESS otherwise. Never synchronizes.
  CUresult launch(const kd_gemm_args& args, CUstream stream) const;

private:
  LoadedCandidate() = default;
  Module module_;
  std::vector<CUfunction> functions_;
  LaunchPlan plan_;
};

}  // namespace kd::eval
