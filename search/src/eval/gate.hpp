// The validation gate and the timing for one loaded candidate (design.md, "The validation gate",
// "Timing"). Internal to the evaluator: Evaluator::evaluate parses, loads (a kernel plan or a
// cuBLASLt algorithm, eval/candidate.hpp) and calls this.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "eval/candidate.hpp"
#include "eval/eval_kernels.hpp"
#include "eval/evaluator.hpp"
#include "eval/gate_problem.hpp"
#include "eval/roofline.hpp"
#include "eval/verdict.hpp"

namespace kd::eval {

struct GateContext {
  const EvalOptions& options;
  const EvalKernels& kernels;
  CUstream stream;
  const Roofline& roofline;
  std::uint64_t l2_bytes;
};

// Trials on fresh inputs (several calls, nothing reset between them), each output checked; then,
// when the options ask, interleaved timing with re-checked outputs and the roofline floor. The
// candidate's workspace sits in guard bands like every output. `problem` is the operator's
// (GemmProblem, RowProblem), made for the candidate's workspace.
// Throws kd::Error only for failures of the evaluator's own calls (the caller classifies them).
Verdict run_gate_and_timing(const GateContext& ctx, GateProblem& problem, const GateCandidate& candidate);

}  // namespace kd::eval
