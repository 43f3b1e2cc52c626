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
  long long lo = 0;              // 1 with KD_SPLIT16 = 2: each operand's tile has a lo part beside it

  // The tiles of one operand per stage: the k tile itself, or its hi and lo parts.
  KD_HD constexpr long long parts() const { return 1 + lo; }
  // The consumer warpgroups and the producer's.
  KD_HD constexpr long long threads() const { return 128 * (wg + 1); }
  KD_HD constexpr long long bm() const { return 64 * wg * mw; }
  KD_HD constexpr long long bk() const { return 64; }  // a k tile: one 128-byte swizzle row of 16-bit k
  KD_HD constexpr long long acc() const { return bn / 2; }
  // Shared memory, from a 1024-aligned base: the ring of KD_STAGES stages, each the TMA's A tile then
  // its B tile (128-byte swizzled rows, 1024-aligned; with lo parts: A hi, A lo, B hi, B lo); then
  // the 128-byte scratch tensor maps, one per tile of a stage; then a full and an empty mbarrier per
  // stage.
  KD_HD constexpr long long a_bytes() const { return bm() * 128; }
  KD_HD constexpr long long b_bytes() const { return bn * 128; }
  KD_HD constexpr long long stage_bytes() const { return parts() * (a_bytes() + b_bytes()); }
  KD_HD constexpr long long maps_offset() const { return stages * stage_bytes(); }
  KD_HD constexpr long long map_bytes() const { return 256 * parts(); }
  KD_HD constexpr long long bars_offset() const { return maps_offset() + map_bytes(); }
  // The dynamic shared memory of the launch: 1024 bytes of alignment slack and the above, as a part
  // that does not depend on the ring's depth and one per stage.
  KD_HD constexpr long long smem_fixed_bytes() const { return 1024 + map_bytes(); }
  KD_HD constexpr long long smem_stage_bytes() const { return stage_bytes() + 16; }
  KD_HD constexpr long long smem_bytes() const { return smem_fixed_bytes() + stages * smem_stage_bytes(); }
  // KD_CLUSTER stages the CTA's f32 partial tile in its own ring.
  KD_HD constexpr bool partial_tile_fits() const { return bm() * bn * 4 <= stages * stage_bytes(); }
  // Workspace: each CTA's tensor maps (two, or four with lo parts), each in its own 128-byte line, in
  // its own slot of map_bytes().
  KD_HD constexpr long long workspace_bytes(long long ctas) const { return ctas * map_bytes(); }
};

// KD_SPLIT16 (f32 operands): the first launch writes op(A)'s rows and op(B)'s columns as f16 copies,
// k contiguous, each row scaled by its own power of two, after the CTAs' map slots; then each row's
// shift (int32, the power's exponent), op(A)'s then op(B)'s; with lo parts (KD_SPLIT16 = 2, strict
// f32) then the copies of the rests, op(A)'s then op(B)'s, laid out as the hi copies. Every part starts
// 256-aligned; a copy's row is ld16 halves, k rounded up to 64 (128 bytes), its elements past k unwritten
// and never read (the tensor map's width is k). Every TMA box row is then one whole 128-byte line: with
// rows 16-byte aligned (k rounded up to 8), a k of 1000 put most of them across two lines, and 1000^3
// took 23.3-23.4 us against 17.7 (TN, strict, H200, session 40).
struct kd_tma16_ws {
  long long ld16, a16, b16, sha, shb, a16lo, b16lo, end;  // ld16 in halves, the rest byte offsets
};
KD_HD constexpr long long kd_tma16_up(long long bytes) { return (bytes + 255) / 256 * 256; }
KD_HD constexpr kd_tma16_ws kd_tma16_layout(long long map_slots_bytes, long long batch, long long m, long long n,
                                            long long k, bool lo = false) {
  const long long ld16 = (k + 63) / 64 * 64;
  const long long a16 = kd_tma16_up(map_slots_bytes);
  const long long b16 = a16 + kd_tma16_up(batch * m * ld16 * 2);
  const long long sha = b16 + kd_tma16_up(batch * n * ld16 * 2);
  const long long shb = sha + kd_tma16_up(batch * m * 4);
  const long long a16lo = shb + kd_tma16_up(batch * n * 4);
  if (!lo) return {ld16, a16, b16, sha, shb, a16lo, a16lo, a16lo};
  const long long b16lo = a16lo + kd_tma16_up(batch * m * ld16 * 2);
  return {ld16, a16, b16, sha, shb, a16lo, b16lo, b16lo + kd_tma16_up(batch * n * ld16 * 2)};
}
// The first launch: blocks of 256 threads in clusters of `cluster` (KD_COPY_CLUSTER: 1, 2, 4 or 8). A
// row group (8 rows of a k-contiguous operand over all batch entries, a warp per row; or `rows_group`
// rows, 8 or 32 (KD_COPY_ROWS), of one batch entry of an operand whose rows are contiguous) is split over
// k into kd_tma16_ksplit blocks of one cluster, as few as hold their chunk in registers (at most
// `cluster`): a warp holds 64 * kd_tma16_pairs() k of its row, a block of 32 rows 8 * 32 *
// kd_tma16_tiles() k and a block of 8 rows four times that; a longer chunk is read twice (the max, then
// the split). Each operand's blocks are rounded up to whole clusters.
KD_HD constexpr long long kd_tma16_cluster_max() { return 8; }  // the portable cluster size
KD_HD constexpr long long kd_tma16_pairs() { return 32; }
KD_HD constexpr long long kd_tma16_tiles() { return 2; }
KD_HD constexpr long long kd_tma16_ksplit(bool k_contiguous, long long k, long long cluster,
                                          long long rows_group = 32) {
  const long long held = k_contiguous ? 64 * kd_tma16_pairs() : 8 * 32 * kd_tma16_tiles() * (32 / rows_group);
  long long f = 1;
  while (f < cluster && f * held < k) f *= 2;
  return f;
}
KD_HD constexpr long long kd_tma16_groups(bool k_contiguous, long long batch, long long rows,
                                          long long rows_group = 32) {
  return k_contiguous ? (batch * rows + 7) / 8 : batch * ((rows + rows_group - 1) / rows_group);
}
KD_HD constexpr long long kd_tma16_blocks(bool k_contiguous, long long batch, long long rows, long long k,
                                          long long cluster, long long rows_group = 32) {
  return (kd_tma16_groups(k_contiguous, batch, rows, rows_group) *
              kd_tma16_ksplit(k_contiguous, k, cluster, rows_group) +
          cluster - 1) /
         cluster * cluster;
}

#endif  // KD_WG_TMA_LAYOUT_CUH
