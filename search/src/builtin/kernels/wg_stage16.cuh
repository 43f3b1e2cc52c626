// One ring stage's 16-bit wgmmas, as wg_tiled (kd_ops_16bit, wg_tiled_operands.cuh) and wg_tma run
// them: the warpgroup's KD_MW m64 blocks of A times B, both read by wgmma from shared memory.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "wg_stage16.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
// The includer defines first: KD_MW and kAcc, and includes wg_common.cuh and wg_wgmma.cuh.

// The stage's tiles at shared addresses sa (the warpgroup's first m64 block of A; the next ones
// follow 64 * 128 bytes apart) and sb (B): k16 per wgmma, four per 128-byte row. The caller computes
// the addresses, in the kernel's own terms (moved in here, the same arithmetic compiles to other
// instructions). kd_wgmma_steps16 issues the wgmmas alone, for a caller that puts several stages'
// worth in one commit group (wg_tma's strict f32: three products per k tile), the first k16 step
// with scale_d `first` (0: the sums start afresh); kd_wgmma_stage16 issues one stage between a fence
// and a commit. The wgmmas are left in flight.
template <class T>
__device__ __forceinline__ void kd_wgmma_steps16(float (&acc)[KD_MW][kAcc], unsigned sa, unsigned sb, int first) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int mw = 0; mw < KD_MW; ++mw)
      kd_wgmma<T>(acc[mw], kd_desc(sa + mw * 64 * 128 + ks * 32), kd_desc(sb + ks * 32), ks > 0 ? 1 : first);
}
template <class T>
__device__ __forceinline__ void kd_wgmma_stage16(float (&acc)[KD_MW][kAcc], unsigned sa, unsigned sb) {
  kd_wg_fence();
  kd_wgmma_steps16<T>(acc, sa, sb, 1);
  kd_wg_commit();
}
