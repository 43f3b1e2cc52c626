// What the wg_tma kernel (wg_tma.cu) and its host rules (family_wg_tma.cpp) must agree on: the
// CTA's shared memory and the workspace. Compiled by both sides: NVRTC and nvcc as part of the
// rendered source (an embedded file, like the kernels), the host compiler as
// builtin/kernels/wg_tma_layout.cuh. Plain C++17 without CUDA types; every function is inline, so
// that nothing reaches a cubin that does not use it.
#ifndef KD_WG_TMA_LAYOUT_CUH
#define KD_WG_TMA_LAYOUT_CUH

#include "host_device.cuh"

// The named parameters of a configuration (the KD_* macros of wg_tma.cu) that fix its layout, and what
// follows from them. Sizes in bytes.
struct kd_wg_tma_layout {
  long long wg, mw, bn, stages;  // KD_WG consumer warpgroups, KD_MW, KD_BN, KD_STAGES

  // The consumer warpgroups and the producer's.
  KD_HD constexpr long long threads() const { return 128 * (wg + 1); }
  KD_HD constexpr long long bm() const { return 64 * wg * mw; }
  KD_HD constexpr long long bk() const { return 64; }  // a k tile: one 128-byte swizzle row of 16-bit k
  KD_HD constexpr long long acc() const { return bn / 2; }
  // Shared memory, from a 1024-aligned base: the ring of KD_STAGES stages, each the TMA's A tile then
  // its B tile (128-byte swizzled rows, 1024-aligned); then the two 128-byte scratch tensor maps;
  // then a full and an empty mbarrier per stage.
  KD_HD constexpr long long a_bytes() const { return bm() * 128; }
  KD_HD constexpr long long b_bytes() const { return bn * 128; }
  KD_HD constexpr long long stage_bytes() const { return a_bytes() + b_bytes(); }
  KD_HD constexpr long long maps_offset() const { return stages * stage_bytes(); }
  KD_HD constexpr long long map_bytes() const { return 256; }
  KD_HD constexpr long long bars_offset() const { return maps_offset() + map_bytes(); }
  // The dynamic shared memory of the launch: 1024 bytes of alignment slack and the above, as a part
  // that does not depend on the ring's depth and one per stage.
  KD_HD constexpr long long smem_fixed_bytes() const { return 1024 + map_bytes(); }
  KD_HD constexpr long long smem_stage_bytes() const { return stage_bytes() + 16; }
  KD_HD constexpr long long smem_bytes() const { return smem_fixed_bytes() + stages * smem_stage_bytes(); }
  // KD_CLUSTER stages the CTA's f32 partial tile in its own ring.
  KD_HD constexpr bool partial_tile_fits() const { return bm() * bn * 4 <= stages * stage_bytes(); }
  // Workspace: each CTA's two tensor maps, each in its own 128-byte line, in its own 256-byte slot.
  KD_HD constexpr long long workspace_bytes(long long ctas) const { return ctas * map_bytes(); }
};

#endif  // KD_WG_TMA_LAYOUT_CUH
