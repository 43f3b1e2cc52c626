// The tc_tiled family's host-side rules (kernels/tc_tiled.cu): the general tensor-core tiled GEMM
// for ta = T|N, tb = N, A and B of one type. 16-bit inputs run mma.sync m16n8k16; f32 inputs run
// error-compensated TF32 (3xTF32) unless the call's precision class allows plain TF32. Optional
// split-K with a deterministic second launch (a workspace of f32 partials).
//
// The lead adds tc_tiled_family() to the families() table and tc_tiled_ideas() to the idea
// catalogue; both are self-contained here.
#pragma once

#include <span>

#include "builtin/family.hpp"
#include "builtin/ideas.hpp"

namespace kd::builtin {

// The family row; `source` is embedded_kernel("tc_tiled.cu").
const Family& tc_tiled_family();

// Parameter moves of tc_tiled (family "tc_tiled"), each with its idea in words.
std::span<const IdeaMove> tc_tiled_ideas();

}  // namespace kd::builtin
