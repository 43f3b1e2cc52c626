// LAB KERNEL, not a family (session 46): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32
// accumulate (beta and bias as the families). Session 29's persistent kernels landed 5-10 us above
// the streaming read on every mid-size shape, and 2.1-2.7 us of that was each CTA reading all the
// tokens (128 KB at k = 4096) from L2 before its first mma. Here k is split over a cluster of KD_KS
// CTAs, so each CTA reads only its slice of the tokens, and the cluster sums its partials once, at
// the end (session 29's xcl summed them per 8-row block, about 4 us a round trip):
//  - a CTA owns 8 * KD_WARPS / KD_KW rows and one k slice; KD_KW warps share each octet of rows, each
//    a contiguous part of the slice;
//  - each lane loads straight into its m16n8k16 B fragments (xdirect's pattern: lane (g, t) reads
//    row g at 16-byte chunk t of each 32-k chunk), KD_U chunks a group, the next group in flight
//    while the mmas of this one run;
//  - the tokens' slice sits in shared memory (rows padded by 64 bytes: conflict-free reads);
//  - the warps' partials go to shared memory, the cluster meets at a barrier, and CTA rank r sums
//    its share of the rows over the KD_KS CTAs in rank order (deterministic), then applies the
//    epilogue.
// Ran (session 46, H200, lab_xks.json): correct everywhere (errors equal to cuBLAS's), and slower than
// cuBLAS on every mid-size shape, 0.43-0.89x (best: 4096 x 16 x 4096 at 14.5 us, KD_KS 2 KD_KW 2,
// against 12.9); 1.14x at 1024 x 16 x 4096 (the first variant, KD_KW 1). More CTAs (a larger KD_KS,
// KD_KW or two CTAs an SM) were slower every time: a CTA's fixed costs (the tokens' slice, the ramp,
// two cluster barriers) outweigh the tokens it no longer reads. Not kept.
// Plan: grid = [KD_KS * ceil(m / RB), 1, batch] (RB = 8 * KD_WARPS / KD_KW), block = [32 * KD_WARPS],
//   smem = 16 * (kc + 32) * sizeof(in) + KD_KW * RB * 16 * 4, kc = ceil(k / (32 KD_KS)) * 32.
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
#define KD_WARPS 16
#endif
#ifndef KD_KS
#define KD_KS 4
#endif
#ifndef KD_U
#define KD_U 8
#endif
#ifndef KD_KW
#define KD_KW 1  // warps that share an octet, each a contiguous part of the CTA's k slice
#endif
#ifndef KD_MINB
#define KD_MINB 1
#endif
#ifndef KD_LD
#define KD_LD 0  // 0: ld.global.nc.L1::no_allocate; 1: plain __ldg
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"

__device__ __forceinline__ void kd_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

extern "C" __global__ void __cluster_dims__(KD_KS, 1, 1) __launch_bounds__(32 * KD_WARPS, KD_MINB)
    kd_skinny_xks(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int RB = 8 * (KD_WARPS / KD_KW);
  static_assert(KD_WARPS % KD_KW == 0, "KD_KW divides KD_WARPS");
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const long long mg = blockIdx.x / KD_KS;
  const long long kc = (k + 32 * KD_KS - 1) / (32 * KD_KS) * 32;
  const long long kb = rank * kc;
  const long long ke = kb + kc < k ? kb + kc : k;
  const int nch = ke > kb ? static_cast<int>((ke - kb + 31) / 32) : 0;
  const int ld_tok = static_cast<int>(kc) + 32;  // elements; 64 bytes of padding a row
  KD_IN_T* tok = reinterpret_cast<KD_IN_T*>(smem);
  float* part = reinterpret_cast<float*>(smem + 16 * ld_tok * sizeof(KD_IN_T));
  const uint4 zero = make_uint4(0, 0, 0, 0);

  const int oct = warp / KD_KW, kw = warp % KD_KW;
  const int cpw = (nch + KD_KW - 1) / KD_KW;  // 32-k chunks a warp
  const int c0 = kw * cpw;
  const int nchw = nch - c0 < cpw ? (nch - c0 > 0 ? nch - c0 : 0) : cpw;
  const long long row0 = mg * RB + 8 * oct + g;
  const KD_IN_T* arow = A + (row0 < m ? row0 : m - 1) * args.lda + kb + 32LL * c0 + 8 * t;
  auto load = [&](uint4 (&w)[KD_U], int grp) {
#pragma unroll
    for (int q = 0; q < KD_U; ++q) {
      const int c = grp * KD_U + q;
      const long long kk = kb + 32LL * (c0 + c) + 8 * t;
      if (c < nchw && kk + 8 <= ke) {
#if KD_LD
        w[q] = __ldg(reinterpret_cast<const uint4*>(arow + 32LL * c));
#else
        w[q] = kd_load_stream(arow + 32LL * c);
#endif
      } else {
        w[q] = zero;
      }
    }
  };
  uint4 w0[KD_U], w1[KD_U];
  load(w0, 0);
  // The tokens' slice: rows past n and k past ke are zeros.
  const int cpr = static_cast<int>(kc / 8);  // 16-byte chunks a row
  for (int idx = threadIdx.x; idx < 16 * cpr; idx += blockDim.x) {
    const int r = idx / cpr, c8 = idx % cpr;
    const long long kk = kb + 8LL * c8;
    uint4 v = zero;
    if (r < n && kk + 8 <= ke) v = __ldg(reinterpret_cast<const uint4*>(B + r * args.ldb + kk));
    *reinterpret_cast<uint4*>(tok + r * ld_tok + 8 * c8) = v;
  }
  __syncthreads();

  float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  const KD_IN_T* ta = tok + g * ld_tok + 32 * c0 + 8 * t;
  const KD_IN_T* tb = tok + (g + 8) * ld_tok + 32 * c0 + 8 * t;
  auto compute = [&](const uint4 (&w)[KD_U], int grp) {
#pragma unroll
    for (int q = 0; q < KD_U; ++q) {
      const int c = grp * KD_U + q;
      if (c < nchw) {
        const uint4 xa = *reinterpret_cast<const uint4*>(ta + 32 * c);
        const uint4 xb = *reinterpret_cast<const uint4*>(tb + 32 * c);
        kd_mma(acc[q & 1], xa.x, xb.x, xa.y, xb.y, w[q].x, w[q].y, static_cast<KD_IN_T*>(nullptr));
        kd_mma(acc[q & 1], xa.z, xb.z, xa.w, xb.w, w[q].z, w[q].w, static_cast<KD_IN_T*>(nullptr));
      }
    }
  };
  const int ngrp = (nchw + KD_U - 1) / KD_U;
#pragma unroll 1
  for (int grp = 0; grp < ngrp; grp += 2) {
    load(w1, grp + 1);
    compute(w0, grp);
    if (grp + 1 < ngrp) {
      load(w0, grp + 2);
      compute(w1, grp + 1);
    }
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

  // d0, d1: token g, rows 2t and 2t + 1 of the octet; d2, d3: token g + 8.
  {
    const int rl = 8 * oct + 2 * t;
    float* pw = part + kw * 16 * RB;
    pw[g * RB + rl] = acc[0][0] + acc[1][0];
    pw[g * RB + rl + 1] = acc[0][1] + acc[1][1];
    pw[(g + 8) * RB + rl] = acc[0][2] + acc[1][2];
    pw[(g + 8) * RB + rl + 1] = acc[0][3] + acc[1][3];
  }
  kd_cluster_sync();
  constexpr int share = RB / KD_KS;
  const unsigned part_addr = static_cast<unsigned>(__cvta_generic_to_shared(part));
  for (int idx = threadIdx.x; idx < 16 * share; idx += blockDim.x) {
    const int tk = idx / share, rl = static_cast<int>(rank) * share + idx % share;
    if (tk >= n) continue;
    const unsigned off = part_addr + 4u * (tk * RB + rl);
    float sum = 0.f;
#pragma unroll
    for (int q = 0; q < KD_KS; ++q) {
      unsigned remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(off), "r"(q));
#pragma unroll
      for (int j = 0; j < KD_KW; ++j) {
        float v;
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote + 4u * j * 16 * RB) : "memory");
        sum += v;
      }
    }
    kd_epilogue(args, C, mg * RB + rl, tk, sum);
  }
  kd_cluster_sync();  // no CTA leaves while another reads its partials
}
