// LAB KERNEL, not a family (issue 27, session 50, H200, lab_xsk.json): correct on every variant, 0.76-0.90x
// cuBLAS on the mid-size and large 16-token shapes, 1.07x at 1024 x 16 x 4096 (docs/kernel-notes.md).
// Decode GEMMs of up to 16 tokens as one launch of many small CTAs that split k, with a deterministic
// reduction inside the launch. C = alpha * A^T B (+ beta C) (+ bias)
// for ta = T, tb = N, f16/bf16, n <= 16, f32 accumulation.
// Why: in the e2e decode step cuBLAS runs q, k, v, o and down (4096 x 16 x 4096, 1024 x 16 x 4096,
// 4096 x 16 x 14336) as a split-K kernel plus a separate splitKreduce kernel of 1.6-1.9 us (20 of the
// step's 49 GEMM kernels, 35 us of 1034, plus their gaps), and the lab's earlier n = 16 kernels pay a
// persistent CTA's whole k of tokens (128 KB from L2 at k = 4096) before their first mma.
//  - CTA (x, y) owns the 8 * KD_OCTETS rows from 8 * KD_OCTETS * x and the k range of KD_WARPS slices
//    of KD_SL elements from y * KD_WARPS * KD_SL; warp w holds the tokens' m16n8k16
//    fragments for its slice only (KD_SL / 4 registers), so a CTA reads 16 x KD_WARPS * KD_SL tokens;
//  - each lane loads straight into its B fragments (skinny_xdirect's pattern: lane (g, t) reads row g
//    of an octet at 16-byte chunks 4q + t of the slice, 64 contiguous bytes of 8 rows per
//    instruction), KD_U octets in flight per warp, every octet's sum over the slice finished at once
//    into the warp's place in shared memory; the warps' sums meet in warp order;
//  - with k split over gridDim.y CTAs, each writes its 8 * KD_OCTETS x 16 partial sums to the
//    workspace and counts itself on its row block's ticket; the last to arrive adds the partials in
//    split order (so the bits do not depend on who was last) and finishes C. The ticket is a 64-bit
//    word (launch << 16 | arrivals) keyed by %gridid, the launch's own number: whatever the workspace
//    held before (a previous call's ticket, poison) counts as no arrival, and the last arrival puts
//    it back to 0 for the next launch. No zeroing launch, no cluster.
// Plan: grid = [ceil(m / (8 * KD_OCTETS)), ceil(k / (KD_WARPS * KD_SL)), batch], block = [32 * KD_WARPS],
//   smem = KD_WARPS * KD_OCTETS * 512 + 16; workspace (gridDim.y > 1) = tiles * 8 + tiles * splits *
//   KD_OCTETS * 512 bytes, tiles = gridDim.x * batch. Needs k, lda, ldb multiples of 8, A, B 16-byte aligned.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_WARPS
#define KD_WARPS 8
#endif
#ifndef KD_OCTETS
#define KD_OCTETS 8
#endif
#ifndef KD_SL
#define KD_SL 128  // k per warp: 128 or 256
#endif
#ifndef KD_U
#define KD_U 4  // octets in flight per warp
#endif
#ifndef KD_TRIG
#define KD_TRIG 0
#endif
#ifndef KD_MINB
#define KD_MINB 2
#endif
#define KD_NQ (KD_SL / 32)
static_assert(KD_SL == 64 || KD_SL == 128 || KD_SL == 256, "KD_SL is 64, 128 or 256");
static_assert(KD_U >= 1 && KD_U <= KD_OCTETS, "KD_U in 1..KD_OCTETS");

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, KD_MINB) kd_skinny_xsk(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
#if KD_TRIG
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  float* red = reinterpret_cast<float*>(smem);  // [warp][octet][4][32]
  int* last_flag = reinterpret_cast<int*>(smem + KD_WARPS * KD_OCTETS * 512);
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const long long row0 = static_cast<long long>(blockIdx.x) * 8 * KD_OCTETS;
  const long long k0 = (static_cast<long long>(blockIdx.y) * KD_WARPS + warp) * KD_SL;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // The tokens' fragments for this warp's slice: tokens g and g + 8 at chunks 4q + t.
  uint4 xa[KD_NQ], xb[KD_NQ];
#pragma unroll
  for (int q = 0; q < KD_NQ; ++q) {
    const long long kk = k0 + 8 * (4 * q + t);
    xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
    xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
  }
  uint4 w[KD_U][KD_NQ];
  auto load = [&](uint4 (&d)[KD_NQ], int o) {
    long long row = row0 + 8 * o + g;
    row = row < m ? row : m - 1;
    const KD_IN_T* p = A + row * args.lda + k0 + 8 * t;
#pragma unroll
    for (int q = 0; q < KD_NQ; ++q) d[q] = k0 + 8 * t + 32 * q < k ? kd_load_stream(p + 32 * q) : zero;
  };
#pragma unroll
  for (int o = 0; o < KD_U; ++o) load(w[o], o);
#pragma unroll
  for (int o = 0; o < KD_OCTETS; ++o) {
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int q = 0; q < KD_NQ; ++q) {
      kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, w[o % KD_U][q].x, w[o % KD_U][q].y,
             static_cast<KD_IN_T*>(nullptr));
      kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, w[o % KD_U][q].z, w[o % KD_U][q].w,
             static_cast<KD_IN_T*>(nullptr));
    }
    if (o + KD_U < KD_OCTETS) load(w[o % KD_U], o + KD_U);
#pragma unroll
    for (int i = 0; i < 4; ++i) red[((warp * KD_OCTETS + o) * 4 + i) * 32 + lane] = acc[0][i] + acc[1][i];
  }
  __syncthreads();

  // The CTA's sums, in warp order; element idx of the block: octet idx / 128, accumulator (idx / 32) % 4,
  // lane idx % 32 (token (l >> 2) (+ 8 for accumulators 2, 3), row 2 (l & 3) (+ 1 for 1, 3)).
  constexpr int kOut = KD_OCTETS * 128;
  constexpr int kPer = (kOut + 32 * KD_WARPS - 1) / (32 * KD_WARPS);
  float sum[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int idx = threadIdx.x + j * 32 * KD_WARPS;
    sum[j] = 0.f;
    if (idx < kOut) {
      const int o = idx / 128, r = idx % 128;
#pragma unroll
      for (int ww = 0; ww < KD_WARPS; ++ww) sum[j] += red[(ww * KD_OCTETS + o) * 128 + r];
    }
  }
  auto finish = [&](int idx, float v) {
    const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
    kd_epilogue(args, C, row0 + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), v);
  };
  if (gridDim.y == 1) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int idx = threadIdx.x + j * 32 * KD_WARPS;
      if (idx < kOut) finish(idx, sum[j]);
    }
    return;
  }
  const long long tile = z * gridDim.x + blockIdx.x;
  const long long tiles = static_cast<long long>(gridDim.x) * gridDim.z;
  unsigned long long* ticket = static_cast<unsigned long long*>(args.workspace) + tile;
  float* part = reinterpret_cast<float*>(static_cast<unsigned long long*>(args.workspace) + tiles) +
                tile * gridDim.y * kOut;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int idx = threadIdx.x + j * 32 * KD_WARPS;
    if (idx < kOut) __stcg(part + blockIdx.y * kOut + idx, sum[j]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long gid;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(gid));
    const unsigned long long epoch = (gid & 0x7fffffffffffull) | 0x800000000000ull;  // 48 bits, never 0
    unsigned long long cur = *reinterpret_cast<volatile unsigned long long*>(ticket), want;
    for (;;) {
      want = (cur >> 16) == epoch ? cur + 1 : (epoch << 16) | 1;
      const unsigned long long prev = atomicCAS(ticket, cur, want);
      if (prev == cur) break;
      cur = prev;
    }
    const int last = (want & 0xffff) == gridDim.y;
    if (last) *reinterpret_cast<volatile unsigned long long*>(ticket) = 0;
    *last_flag = last;
  }
  __syncthreads();
  if (!*last_flag) return;
  __threadfence();
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int idx = threadIdx.x + j * 32 * KD_WARPS;
    if (idx >= kOut) continue;
    float v = 0.f;
    for (unsigned s = 0; s < gridDim.y; ++s) v += __ldcg(part + s * kOut + idx);
    finish(idx, v);
  }
}
