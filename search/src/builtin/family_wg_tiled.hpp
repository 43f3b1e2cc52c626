// The wg_tiled family's host-side rules (kernels/wg_tiled.cu): the Hopper warpgroup GEMM
// (wgmma, sm_90a) for f32 inputs, error-compensated TF32 (3xTF32) with B split once per k tile in
// shared memory, A split in registers; ta = T|N, tb = N. Optional split-K, reduced deterministically
// in a second launch or (KD_CLUSTER) inside a thread-block cluster of the tile's splits. The kernel's 16-bit path is not proposed: in the kernel lab it ran at 0.53-0.99x of cuBLAS
// (docs/kernel-notes.md), where tc_tiled and cuBLASLt serve those keys.
#pragma once

#include <span>

#include "builtin/family.hpp"
#include "builtin/ideas.hpp"

namespace kd::builtin {

// The family row; `source` is embedded_kernel("wg_tiled.cu").
const Family& wg_tiled_family();

// `p` as stream-K (KD_SK) over `ctas` CTAs: no other way of dividing k (split-K, tail, cluster),
// B's lo parts split in the kernel, one promotion per k tile. The seeds and the wg.sk_on move use it.
Params as_stream_k(Params p, long long ctas);

// Parameter moves of wg_tiled (family "wg_tiled"), each with its idea in words.
std::span<const IdeaMove> wg_tiled_ideas();

}  // namespace kd::builtin
