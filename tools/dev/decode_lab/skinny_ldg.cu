// LAB KERNEL, not a family: it lost to cuBLAS (docs/kernel-notes.md, session 28): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32 accumulate.
// simt_gemv's lesson (session 28) applied to n = 16, where the CUDA cores would be the limit: A, the
// weight, is streamed straight from global memory into registers with many small loads in flight,
// and the math runs on mma.sync with the roles swapped: the n <= 16 tokens are the mma's M (16),
// eight weight rows its N, so a warp reads 8 rows x 64 contiguous bytes per load instruction and,
// over KD_UNROLL consecutive k blocks, 8 rows x (64 * KD_UNROLL) contiguous bytes. B (the tokens,
// n x k) is copied once per CTA into shared memory (rows padded by 64 bytes), zero past n.
//  - a CTA owns KD_GPC groups of 8 rows at a time; each group's k range is split over KD_KS warps
//    (contiguous k-block ranges), summed through shared memory when KD_KS > 1;
//  - lane (g, t) loads 16 bytes of row g at k block kb + 8t; the tokens' fragments use the same k
//    permutation (as skinny_mma, with A and B swapped).
// Plan: grid = [ceil(ceil(m / 8) / KD_GPC) or fewer (row groups loop), 1, batch],
//   block = [32 * KD_GPC * KD_KS], smem = 16 * (2k + 64) + KD_GPC * KD_KS * 512.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_GPC 14
#define KD_KS 2
#define KD_UNROLL 4
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"


extern "C" __global__ void __launch_bounds__(32 * KD_GPC * KD_KS, 1)
kd_skinny_ldg(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const long long x_row = k * 2 + 64;  // bytes per token row in shared memory
  float* red = reinterpret_cast<float*>(smem + 16 * x_row);  // [KD_GPC][KD_KS][4][32]

  // The tokens into shared memory, 16 bytes per thread per step; rows past n are zeros.
  const long long vecs = k / 8;
  for (long long i = threadIdx.x; i < 16 * vecs; i += blockDim.x) {
    const long long tok = i / vecs, v = i % vecs;
    const uint4 val = tok < n ? *reinterpret_cast<const uint4*>(B + tok * args.ldb + v * 8) : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(smem + tok * x_row + v * 16) = val;
  }
  __syncthreads();

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int slot = warp / KD_KS, split = warp % KD_KS;
  const int g = lane >> 2, t = lane & 3;
  const long long groups = (m + 7) / 8, kblocks = (k + 31) / 32;
  const long long per = (kblocks + KD_KS - 1) / KD_KS;
  const long long kb0 = split * per, kb1 = kb0 + per < kblocks ? kb0 + per : kblocks;
  const unsigned char* xa_base = smem + g * x_row + t * 16;
  const unsigned char* xb_base = smem + (g + 8) * x_row + t * 16;

  for (long long base = static_cast<long long>(blockIdx.x) * KD_GPC; base < groups;
       base += static_cast<long long>(gridDim.x) * KD_GPC) {
    const long long rg = base + slot;
    long long row = rg * 8 + g;
    row = row < m ? row : m - 1;
    const KD_IN_T* a_row = A + row * args.lda + t * 8;
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    for (long long kb = kb0; rg < groups && kb < kb1; kb += KD_UNROLL) {
      uint4 w[KD_UNROLL];
#pragma unroll
      for (int u = 0; u < KD_UNROLL; ++u) {
        const long long kk = (kb + u) * 32 + t * 8;
        w[u] = (kb + u < kb1 && kk < k) ? kd_load_stream(a_row + (kb + u) * 32) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < KD_UNROLL; ++u) {
        if (kb + u >= kb1) break;
        const uint4 xa = *reinterpret_cast<const uint4*>(xa_base + (kb + u) * 64);
        const uint4 xb = *reinterpret_cast<const uint4*>(xb_base + (kb + u) * 64);
        kd_mma(acc[u & 1], xa.x, xb.x, xa.y, xb.y, w[u].x, w[u].y, static_cast<KD_IN_T*>(nullptr));
        kd_mma(acc[u & 1], xa.z, xb.z, xa.w, xb.w, w[u].z, w[u].w, static_cast<KD_IN_T*>(nullptr));
      }
    }
    float sum[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) sum[i] = acc[0][i] + acc[1][i];
#if KD_KS > 1
#pragma unroll
    for (int i = 0; i < 4; ++i) red[((slot * KD_KS + split) * 4 + i) * 32 + lane] = sum[i];
    __syncthreads();
    if (split == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float s = 0.f;
#pragma unroll
        for (int p = 0; p < KD_KS; ++p) s += red[((slot * KD_KS + p) * 4 + i) * 32 + lane];
        sum[i] = s;
      }
    }
    __syncthreads();
    if (split != 0) continue;
#endif
    if (rg < groups) {
      // c0, c1: token g, rows 2t and 2t+1; c2, c3: token g + 8.
#pragma unroll
      for (int i = 0; i < 4; ++i) kd_epilogue(args, C, rg * 8 + 2 * t + (i & 1), g + (i >= 2 ? 8 : 0), sum[i]);
    }
  }
}
