// Timing in the serving regime (eval/serving_regime.hpp): the candidate and the baseline call each
// captured as R back-to-back calls in one CUDA graph over rotating copies of the weight operand
// (for a row operator, its input), replayed interleaved; and a streaming read of the same inputs
// timed the same way, the bandwidth a kernel that only streams its inputs reaches there. Per-call
// time = replay time / R. Operator-generic: the problem (eval/gate_problem.hpp) supplies the calls.
#pragma once

#include <cuda.h>

#include <optional>
#include <string>

#include "eval/candidate.hpp"
#include "eval/cuda_event.hpp"
#include "eval/cuda_graph.hpp"
#include "eval/evaluator.hpp"
#include "eval/gate_problem.hpp"
#include "eval/serving_regime.hpp"

namespace kd::eval {

struct ServingTimes {
  TimeStats candidate, baseline;
  double stream_us = 0.0;  // median per-call time of the streaming read of the call's inputs
};

class ServingTimer {
public:
  // Calls run on set `s` with the rotated operand replaced by each copy in turn. Makes the copies
  // (GateProblem::make_serving_copies).
  ServingTimer(GateProblem& problem, CUstream stream, int s, const ServingShape& shape);

  // Captures the three graphs. nullopt, or why the candidate's calls could not be captured (its
  // launch refused, or the capture invalidated): the text of a launch_failed verdict.
  std::optional<std::string> capture(const GateCandidate& candidate);
  // Interleaved replays (each side first in turn) until `min_replays` and the time budget are
  // spent, after `warmup` replays of each. Synchronizes.
  ServingTimes measure(int warmup, int min_replays, int max_replays, std::chrono::milliseconds budget);
  // One more replay of the candidate's graph (its last call writes C of set s). Asynchronous.
  void replay_candidate();
  const ServingShape& shape() const { return shape_; }

private:
  GateProblem& problem_;
  CUstream stream_;
  int set_;
  ServingShape shape_;
  GraphExec candidate_graph_, vendor_graph_, stream_graph_;
  Event ev_[4];
};

}  // namespace kd::eval
