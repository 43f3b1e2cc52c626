// The wg_tma family's host-side rules (kernels/wg_tma.cu): the Hopper warpgroup GEMM for 16-bit
// inputs fed by TMA (a producer warp, consumer warpgroups of wgmmas, mbarriers per ring slot), with
// the tensor maps built on the device in the plan's workspace; ta = T, tb = N. Optional split-K,
// reduced inside a thread-block cluster of the tile's splits. The same kernel serves f32 through f16
// copies as two more families: wg_tma_f32 (the TF32 class) and wg_tma_f16s (strict f32), below.
//
// A trial family (Family::trial): it has not yet passed the validation gate on a GPU, so the builtin
// proposer seeds it only when KDISPATCH_TRIAL_FAMILIES names it (docs/kernel-notes.md, session 9).
#pragma once

#include <span>

#include "builtin/family.hpp"
#include "builtin/ideas.hpp"

namespace kd::builtin {

// The family row; `source` is embedded_kernel("wg_tma.cu").
const Family& wg_tma_family();

// Parameter moves of wg_tma (family "wg_tma"), each with its idea in words.
std::span<const IdeaMove> wg_tma_ideas();

// wg_tma_f32: the same kernel for f32 calls of the TF32 class, any ta and tb (KD_SPLIT16): a first
// launch writes op(A) and op(B) as f16 copies, each row scaled by a power of two (f16's 11
// significant bits are TF32's), and the TMA kernel multiplies them at f16's rate (issue 30). Its
// `source` is embedded_kernel("wg_tma.cu") too. Not a trial: it passed the gate on a GPU.
const Family& wg_tma_f32_family();
// wg_tma's moves for wg_tma_f32 (family "wg_tma_f32").
std::span<const IdeaMove> wg_tma_f32_ideas();

// wg_tma_f16s: strict f32 calls (any ta and tb, strided batches) on the same kernel (KD_SPLIT16 = 2):
// the first launch also writes each element's rest as a second f16 copy, and the TMA kernel sums
// lo(A) hi(B) + hi(A) lo(B) + hi(A) hi(B) per k tile, promoting each tile's sum to f32 accumulators
// on the CUDA cores (issue 30).
const Family& wg_tma_f16s_family();
// wg_tma's moves for wg_tma_f16s (family "wg_tma_f16s").
std::span<const IdeaMove> wg_tma_f16s_ideas();

}  // namespace kd::builtin
