// The serving regime of design.md's "Timing": a call is timed as one of R back-to-back calls
// captured in one CUDA graph, each on its own copy of the weight operand, the copies together at
// least 3x the L2, so that every call streams its weights from HBM while the other operand stays
// hot, as in a decode step where each layer reads its own weights and the previous layer's output.
// Per-call time = graph time / R. This file only sizes it (pure arithmetic, tested on the CPU);
// gate.cpp captures and times the graphs.
#pragma once

#include <cstdint>

#include "key/gemm_key.hpp"

namespace kd::eval {

enum class WeightOperand : std::uint8_t { a, b };

struct ServingShape {
  WeightOperand weight = WeightOperand::a;  // the operand rotated across copies
  std::uint64_t weight_bytes = 0;           // one copy's span
  int copies = 1;                           // distinct copies (copy 0 is the trial's own buffer)
  int calls = 1;                            // calls per graph; every copy is used
};

// Limits of the sizing: copies cover at least kL2Multiple x the L2 where memory allows; calls are
// enough for a graph of about kTargetGraphUs at the floor, and at most kMaxCalls.
inline constexpr int kL2Multiple = 3;
inline constexpr double kTargetGraphUs = 200.0;
inline constexpr int kMaxCalls = 64;
inline constexpr int kMinCalls = 2;

// The weight is the larger input operand (A on a tie): the one a server keeps per layer. `floor_us`
// is the key's roofline floor; `budget_bytes` caps the extra copies (copies - 1 spans), and at
// least one copy (the trial's) always exists.
ServingShape serving_shape(const GemmKey& key, std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes);
// The same sizing for any operator, given its rotated operand and that operand's span in bytes.
ServingShape size_serving(WeightOperand weight, std::uint64_t weight_bytes, std::uint64_t l2_bytes, double floor_us,
                          std::uint64_t budget_bytes);

}  // namespace kd::eval
