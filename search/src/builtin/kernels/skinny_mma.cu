// Family skinny_mma: C = alpha * A^T B (+ beta C) (+ bias) for ta=T tb=N, f16/bf16 inputs, f32
// accumulate, n <= 8*KD_NT. Decode-shaped GEMMs (nn.Linear on 1..32 tokens) are bound by reading
// A once, so the family is built around keeping A's bytes in flight:
//  - each warp owns 16*KD_MT rows of op(A) and a 1/KD_WARPS_K share of K; a CTA's warps split K and
//    reduce through shared memory, so small m still fills the GPU;
//  - every lane loads 16 bytes per row per 32-wide k block straight into mma.sync m16n8k16
//    fragments. A dot product does not depend on the order of k, so A and B are loaded with the
//    same k permutation: lane t of a quad holds physical k [8t, 8t+8) and feeds logical slots
//    {2t,2t+1,2t+8,2t+9} of two consecutive mmas. No shared memory, no ldmatrix;
//  - KD_UNROLL k blocks are loaded before the first mma to keep enough bytes in flight.
// Requires k % 8 == 0, lda % 8 == 0, ldb % 8 == 0 and 16-byte aligned A and B.
//
// Named parameters (the proposer defines them before this source):
//   KD_IN_T  __half | __nv_bfloat16      KD_OUT_T  __half | __nv_bfloat16 | float
//   KD_MT    m16 tiles per warp (1, 2)  KD_NT     n8 tiles (1..4)
//   KD_WARPS_K warps splitting K (1..16) KD_UNROLL k32 blocks in flight per warp (1..8)
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_MT 1
#define KD_NT 1
#define KD_WARPS_K 8
#define KD_UNROLL 4
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif

#include "c_epilogue.cuh"
#include "mma_m16n8k16.cuh"
#include "load_stream.cuh"

__device__ __forceinline__ uint4 kd_load_reuse(const void* p) {
  return __ldg(static_cast<const uint4*>(p));
}

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS_K)
kd_skinny_mma(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  constexpr int kRows = 16 * KD_MT;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int quad = lane & 3;  // which 8-element k slice of a 32-wide block this lane loads
  const int group = lane >> 2;  // row (A) / column (B) within the fragment
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const long long row_base = static_cast<long long>(blockIdx.x) * kRows;

  // Row and column pointers, clamped so that loads stay in bounds; clamped lanes are not stored.
  const KD_IN_T* a_row[KD_MT][2];
#pragma unroll
  for (int mt = 0; mt < KD_MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      long long r = row_base + mt * 16 + group + h * 8;
      r = r < m ? r : m - 1;
      a_row[mt][h] = A + r * args.lda + quad * 8;
    }
  }
  const KD_IN_T* b_col[KD_NT];
  bool b_valid[KD_NT];
#pragma unroll
  for (int nt = 0; nt < KD_NT; ++nt) {
    const long long c = nt * 8 + group;
    b_valid[nt] = c < n;
    b_col[nt] = B + (c < n ? c : 0) * args.ldb + quad * 8;
  }

  float acc[KD_MT][KD_NT][4];
#pragma unroll
  for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < KD_NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

  const long long step = 32LL * KD_UNROLL * KD_WARPS_K;
  for (long long kb = 32LL * KD_UNROLL * warp; kb < k; kb += step) {
    uint4 av[KD_UNROLL][KD_MT][2];
    uint4 bv[KD_UNROLL][KD_NT];
#pragma unroll
    for (int u = 0; u < KD_UNROLL; ++u) {
      const long long kk = kb + u * 32;
      const bool in_k = kk + quad * 8 < k;
#pragma unroll
      for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[u][mt][h] = in_k ? kd_load_stream(a_row[mt][h] + kk) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int nt = 0; nt < KD_NT; ++nt)
        bv[u][nt] = (in_k && b_valid[nt]) ? kd_load_reuse(b_col[nt] + kk) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < KD_UNROLL; ++u)
#pragma unroll
      for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < KD_NT; ++nt) {
          const uint4 a0 = av[u][mt][0], a1 = av[u][mt][1], b = bv[u][nt];
          kd_mma(acc[mt][nt], a0.x, a1.x, a0.y, a1.y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
          kd_mma(acc[mt][nt], a0.z, a1.z, a0.w, a1.w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
        }
  }

  // Reduce the K split across warps through shared memory, then write.
#if KD_WARPS_K > 1
  constexpr int kVals = KD_MT * KD_NT * 4;
  __shared__ float partial[KD_WARPS_K][kVals][32];
#pragma unroll
  for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < KD_NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) partial[warp][(mt * KD_NT + nt) * 4 + i][lane] = acc[mt][nt][i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < kVals * 32; idx += blockDim.x) {
    const int v = idx / 32, l = idx % 32;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < KD_WARPS_K; ++w) sum += partial[w][v][l];
    const int mt = v / (KD_NT * 4), nt = (v / 4) % KD_NT, i = v % 4;
    kd_epilogue(args, C, row_base + mt * 16 + (l >> 2) + (i >= 2 ? 8 : 0),
                nt * 8 + 2 * (l & 3) + (i & 1), sum);
  }
#else
#pragma unroll
  for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < KD_NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        kd_epilogue(args, C, row_base + mt * 16 + group + (i >= 2 ? 8 : 0),
                    nt * 8 + 2 * quad + (i & 1), acc[mt][nt][i]);
#endif
}
