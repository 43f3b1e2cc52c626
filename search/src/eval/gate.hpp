// The validation gate and the timing for one loaded candidate (design.md, "The validation gate",
// "Timing"). Internal to the evaluator: Evaluator::evaluate parses, loads and calls this.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "eval/candidate.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/evaluator.hpp"
#include "eval/roofline.hpp"
#include "eval/verdict.hpp"
#include "key/gemm_key.hpp"

namespace kd::eval {

struct GateContext {
  const GemmKey& key;
  const EvalRequest& request;  // its cubin and plan reload the candidate fresh when needed
  const EvalKernels& kernels;
  CUstream stream;
  const Roofline& roofline;
  std::uint64_t l2_bytes;
  int max_smem_bytes;
};

// Trials on fresh inputs (several calls, nothing reset between them), each output checked; then,
// when the options ask, interleaved timing with re-checked outputs and the roofline floor.
// Throws kd::Error only for failures of the evaluator's own calls (the caller classifies them).
Verdict run_gate_and_timing(const GateContext& ctx, const LoadedCandidate& candidate);

}  // namespace kd::eval
