// A candidate as the validation gate runs it. The gate only needs "run the candidate once on these
// arguments" (and a fresh copy of it, to tell state kept between calls from a wrong result), so a
// kernel plan (KernelCandidate, below) and a cuBLASLt algorithm (eval/cublaslt_candidate.hpp) go
// through the same gate and timing.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "eval/eval_kernels.hpp"
#include "eval/kernel_args.hpp"
#include "kdispatch/gemm.cuh"
#include "plan/launch_plan.hpp"

namespace kd::eval {

struct CandidateError {
  // load_failed: the driver refused the cubin, or cuBLASLt the algorithm for this key.
  enum class Kind { load_failed, plan_invalid } kind;
  std::string message;
};

class GateCandidate {
public:
  virtual ~GateCandidate() = default;
  // The workspace the candidate needs; the gate hands it a guarded one of this size in
  // args.workspace.
  virtual std::uint64_t workspace_bytes() const = 0;
  // Enqueues one call with `args` (the operator's contract struct) on `stream`. Never synchronizes.
  // nullopt when it was queued; otherwise why it was refused (the text of a launch_failed verdict).
  virtual std::optional<std::string> launch(const KernelArgs& args, CUstream stream) const = 0;
  // The same candidate made afresh (module reloaded, descriptors rebuilt); nullptr when that
  // fails.
  virtual std::unique_ptr<GateCandidate> fresh() const = 0;
  // Its first launch is a programmatic dependent of whatever ran before it on the stream (gemm.cuh):
  // the gate then runs it behind a producer that writes its inputs late.
  virtual bool depends_on_previous_kernel() const { return false; }
};

// A kernel candidate: its module, the functions its plan names, and launching the plan with the
// kernel contract's argument struct.
class KernelCandidate final : public GateCandidate {
public:
  // Loads `cubin` and resolves every launch's entry; sets the dynamic shared memory attribute
  // where a launch needs more than 48 KiB. `max_smem_bytes` is the device's opt-in limit.
  static std::variant<std::unique_ptr<KernelCandidate>, CandidateError> load(const std::string& cubin,
                                                                             const LaunchPlan& plan,
                                                                             int max_smem_bytes);

  std::uint64_t workspace_bytes() const override { return plan_.workspace_bytes; }
  // Enqueues every launch of the plan; refused: the first launch's error.
  std::optional<std::string> launch(const KernelArgs& args, CUstream stream) const override;
  std::unique_ptr<GateCandidate> fresh() const override;
  bool depends_on_previous_kernel() const override { return plan_.launches.front().pdl; }

private:
  KernelCandidate() = default;
  Module module_;
  std::vector<CUfunction> functions_;
  LaunchPlan plan_;
  std::string cubin_;
  int max_smem_bytes_ = 0;
};

}  // namespace kd::eval
