// The framework's own kernel as a row operator's baseline (issue 33: "the baseline is what the
// application would have run"). A C++ worker cannot run PyTorch's operators in its own process, so
// it runs a short Python program beside it (`$KD_PYTHON`, default python3) that times torch's
// kernel for the key on the same GPU in the gate's two regimes: R back-to-back calls captured in one
// CUDA graph over copies of x spanning 3x the L2, and one call after an L2 flush. The gate ranks the
// candidate against those times; its error allowance still comes from the evaluator's f32 baseline
// (eval/row_problem.hpp), which computes what the framework's kernel computes.
//
// Measured once per key and worker process (the candidates of a search share it). When Python,
// torch or its CUDA are missing, or KD_FRAMEWORK_BASELINE=off, there are no framework times and the
// gate keeps the evaluator's stand-in, saying so in the verdict.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "key/row_shape.hpp"

namespace kd::eval {

struct FrameworkTimes {
  std::string name;                 // "torch 2.11.0+cu130 F.layer_norm"
  std::vector<double> serving_us;   // per-call times of graph replays
  std::vector<double> isolated_us;  // cold single calls
};

// The framework's times for `shape` on CUDA device `device_ordinal`, or why there are none.
// Never throws (beyond std::bad_alloc).
std::variant<FrameworkTimes, std::string> framework_times(const RowShape& shape, int device_ordinal);

// The Python program (for tests and docs).
std::string_view framework_timing_program();

}  // namespace kd::eval
