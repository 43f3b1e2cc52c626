// Helpers of the warpgroup (wgmma) families, wg_tiled and wg_tma: shared-memory addresses,
// wgmma issue and waits, mbarriers, register hand-off between warpgroups, the k-major 128-byte
// swizzle descriptor and the cluster reduction of K splits; the C epilogue from c_epilogue.cuh.
//
// Not a header a candidate may include: family_rules' embedded-source helper replaces each
// `#include "wg_common.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
// The includer defines first: KD_C_T, KD_BETA_ZERO, KD_BIAS, KD_SPLITK, KD_MW and KD_BN; kBM and
// kThreads (the CTA tile's rows and the block size).
#ifndef KD_WG_COMMON_CUH
#define KD_WG_COMMON_CUH

#include "c_epilogue.cuh"

__device__ __forceinline__ unsigned kd_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void kd_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void kd_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kd_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// mbarriers: init by one thread, then a CTA barrier; arrive releases and a completed wait
// acquires the arriving threads' writes (CTA scope).
__device__ __forceinline__ void kd_mbar_init(unsigned bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void kd_mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void kd_mbar_arrive(unsigned bar) {
  asm volatile("{.reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0];}" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void kd_mbar_wait(unsigned bar, int parity) {
  asm volatile(
      "{.reg .pred p;\n"
      "KD_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra KD_WAIT;}" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Cluster barrier: release this thread's shared-memory writes to, and acquire those of, every thread
// of the cluster.
__device__ __forceinline__ void kd_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Four lanes of partial sums added in place, lane by lane (the split-K sums add splits in order).
__device__ __forceinline__ void kd_add4(float4& sum, const float4 v) {
  sum.x += v.x;
  sum.y += v.y;
  sum.z += v.z;
  sum.w += v.w;
}
// Four consecutive floats (16-byte aligned) from CTA `rank`'s shared memory at the address `addr` has
// in this CTA.
__device__ __forceinline__ float4 kd_ld_cluster4(unsigned addr, int rank) {
  unsigned remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

template <int N>
__device__ __forceinline__ void kd_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void kd_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
// Keeps the compiler from moving accumulator reads or writes across a wgmma wait.
template <int R>
__device__ __forceinline__ void kd_fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor, k-major, 128-byte swizzle: start address >> 4 (bits 0-13),
// leading byte offset (unused by this layout, 1), stride byte offset 1024 >> 4 between 8-row groups
// (bits 32-45), layout 1 = 128B swizzle (bits 62-63). A k step inside the 128-byte row moves the
// start address; the swizzle is applied to the final address, hence the 1024-byte tile alignment.
__device__ __forceinline__ unsigned long long kd_desc(unsigned addr) {
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
// The same descriptor in two parts, for a tile's several k steps: kd_desc_lo(addr) once, then
// kd_desc_at(lo, bytes) per step. A shared address is under 2^18 (228 KB), so the start field never
// carries into the next one and the mask above is a no-op; built so, a step's descriptor is one add
// instead of a mask, shift and or per wgmma (the uniform datapath's share of a narrow tile's loop).
__device__ __forceinline__ unsigned kd_desc_lo(unsigned addr) { return (addr >> 4) | (1u << 16); }
__device__ __forceinline__ unsigned long long kd_desc_at(unsigned lo, unsigned bytes) {
  return (static_cast<unsigned long long>(64u | (1u << 30)) << 32) | (lo + (bytes >> 4));
}

// Visits each of the calling consumer thread's accumulators acc[mw][4 * j + q] with its row and
// column, counted from (row0, col0) at the CTA tile's corner: visit(mw, j, q, row, col, v), v the
// accumulator itself (a visitor may scale it in place, as wg_tiled's f16 splits do). Warpgroup
// wg owns rows [64 * KD_MW * wg, 64 * KD_MW * (wg + 1)); in the wgmma fragment layout thread (g, t) of
// a warp holds rows g and g + 8 (q / 2) of the warp's 16 and columns 2t and 2t + 1 (q % 2) of every 8 (j).
template <typename Visit>
__device__ __forceinline__ void kd_for_each_acc_at(float (&acc)[KD_MW][KD_BN / 2], int wg, int warp, int lane,
                                                   long long row0, long long col0, Visit&& visit) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw) {
    const long long r0 = row0 + wg * KD_MW * 64 + mw * 64 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < KD_BN / 8; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        visit(mw, j, q, r0 + (q >> 1) * 8, col0 + 8 * j + 2 * t + (q & 1), acc[mw][4 * j + q]);
  }
}
// The same visit as visit(row, col, v), v still the accumulator itself.
template <typename Visit>
__device__ __forceinline__ void kd_for_each_acc(float (&acc)[KD_MW][KD_BN / 2], int wg, int warp, int lane,
                                                long long row0, long long col0, Visit&& visit) {
  kd_for_each_acc_at(acc, wg, warp, lane, row0, col0,
                     [&](int, int, int, long long r, long long c, float& v) { visit(r, c, v); });
}

// The thread's accumulators of a tile wholly inside C (rows row0 .. row0 + 64 * KD_WG * KD_MW - 1 and
// columns col0 .. col0 + KD_BN - 1 all in the matrix): the same stores as
// kd_for_each_acc with kd_epilogue, without the two bounds checks and the address product of each
// element (about 7 instructions an element, which at k = 64 outnumber the tile's k loop).
template <typename T>
__device__ __forceinline__ void kd_store_acc_whole(const kd_gemm_args& args, T* C, const float (&acc)[KD_MW][KD_BN / 2],
                                                   int wg, int warp, int lane, long long row0, long long col0) {
  const int g = lane >> 2, t = lane & 3;
  const long long ldc = args.ldc;
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw) {
    const long long r = row0 + wg * KD_MW * 64 + mw * 64 + warp * 16 + g;
    T* p = C + r + (col0 + 2 * t) * ldc;
#pragma unroll
    for (int j = 0; j < KD_BN / 8; ++j, p += 8 * ldc) {
      kd_finish_c(args, p, r, kd_epilogue_value(args, acc[mw][4 * j]));
      kd_finish_c(args, p + ldc, r, kd_epilogue_value(args, acc[mw][4 * j + 1]));
      kd_finish_c(args, p + 8, r + 8, kd_epilogue_value(args, acc[mw][4 * j + 2]));
      kd_finish_c(args, p + ldc + 8, r + 8, kd_epilogue_value(args, acc[mw][4 * j + 3]));
    }
  }
}

// What the cluster's sum v of output (row, col) of entry z becomes before the epilogue: v itself unless
// the kernel defines it first (wg_tma's KD_SPLIT16 scales it back by the operands' powers of two).
#ifndef KD_CLUSTER_VALUE
#define KD_CLUSTER_VALUE(args, z, row, col, v) (v)
#endif
// KD_CLUSTER: the partial tiles of a cluster's splits, summed in split order (wg_tiled's reduce
// launch sums in the same order, so its two split paths agree bit for bit). Every thread of every CTA calls this after its
// consumers stored their partials ([BN][BM] floats at `tile`, column-major like C): each CTA
// finishes a contiguous slice of the tile, rows fastest, so its C writes coalesce.
__device__ __forceinline__ void kd_cluster_finish(const kd_gemm_args& args, unsigned tile, long long z, long long m0,
                                                  long long n0) {
  kd_cluster_sync();
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  // Each thread takes four consecutive elements (one column, kBM being a multiple of 4) and loads
  // them from every split before adding: the remote loads' latency then overlaps instead of adding
  // up element by element (the one-float loop cost about 5 us per tile of 128x128 on an H200).
  static_assert(kBM % 4 == 0, "the cluster sum reads four rows at a time");
  constexpr int kE = kBM * KD_BN, kPer = ((kE + KD_SPLITK - 1) / KD_SPLITK + 3) / 4 * 4;
  const int lo = static_cast<int>(rank) * kPer, hi = lo + kPer < kE ? lo + kPer : kE;
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
  for (int e = lo + 4 * static_cast<int>(threadIdx.x); e < hi; e += 4 * kThreads) {
    float4 part[KD_SPLITK];
#pragma unroll
    for (int s = 0; s < KD_SPLITK; ++s) part[s] = kd_ld_cluster4(tile + 4u * static_cast<unsigned>(e), s);
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int s = 0; s < KD_SPLITK; ++s) kd_add4(sum, part[s]);
    const long long row = m0 + e % kBM, col = n0 + e / kBM;
    if (col >= args.n) continue;
    const float v[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (row + q < args.m) kd_epilogue(args, C, row + q, col, KD_CLUSTER_VALUE(args, z, row + q, col, v[q]));
  }
  // No CTA leaves (or reuses its shared memory) while another still reads it.
  kd_cluster_sync();
}

#if KD_CLUSTER
#define KD_CLUSTER_DIMS __cluster_dims__(1, 1, KD_SPLITK)
#else
#define KD_CLUSTER_DIMS
#endif

#endif  // KD_WG_COMMON_CUH
