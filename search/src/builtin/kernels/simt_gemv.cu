// Family simt_gemv: C = alpha * A^T B (+ beta C) (+ bias) for ta=T tb=N, f16/bf16/f32 inputs, f32
// accumulate on CUDA cores (fmaf), n <= KD_NMAX <= 4. Decode GEMMs at one to four tokens read A,
// the weight, once and do almost no arithmetic, so the kernel is shaped like a streaming read:
//  - a CTA owns KD_WARPS / KD_KSPLIT slots of KD_RPW rows of op(A) (rows are contiguous: lda runs
//    along k); the KD_KSPLIT warps of a slot share each row's k range, and a warp's lanes read it 16
//    bytes apart, so one load instruction covers 512 contiguous bytes;
//  - KD_UNROLL loads per row are issued before the first use (a lane keeps KD_UNROLL * KD_RPW 16-byte
//    loads in flight); A bypasses L1 (read once), B's columns are read through it;
//  - each lane sums its k slice with fmaf, the warp reduces with shuffles, the k split through
//    shared memory; one CTA per row group, many small CTAs at full occupancy, no persistence.
// The mma families (skinny_bulk: one persistent CTA per SM and a deep bulk-copy ring; skinny_mma:
// deep unrolls over 16-row blocks) streamed the same weights at 85-88% of a plain read in the
// serving regime where this shape of work reaches 93-100% (docs/kernel-notes.md, session 28).
// f32 stays strict: plain fp32 products and sums, no tensor cores.
// Requires k, lda and ldb multiples of 16/sizeof(element) and 16-byte aligned A and B.
//
// Named parameters:
//   KD_IN_T, KD_OUT_T as skinny_mma   KD_NMAX columns of B handled (1..4, n <= KD_NMAX)
//   KD_WARPS warps per CTA (1..16)    KD_RPW rows per warp at a time (1, 2)
//   KD_UNROLL 16-byte loads per row in flight per lane (1..16)   KD_BETA_ZERO 0|1   KD_BIAS 0|1
//   KD_KSPLIT warps sharing a row's k range (1..8, divides KD_WARPS): more loads in flight per row,
//     which every measured shape preferred (4 warps, 2 loads each)
// Plan: grid = [ceil(m / (KD_WARPS / KD_KSPLIT * KD_RPW)) (at most 2^31 - 1; the rows then loop), 1,
//   batch], block = [32 * KD_WARPS]; see gemv_plan in families.cpp.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_NMAX 1
#define KD_WARPS 8
#define KD_RPW 1
#define KD_UNROLL 4
#define KD_KSPLIT 1
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif

#define KD_VEC (16 / (int)sizeof(KD_IN_T))  // elements per 16-byte load

#include "c_epilogue.cuh"
#include "load_stream.cuh"

// 16 bytes of elements as floats (8 for 16-bit types, 4 for f32).
__device__ __forceinline__ void kd_unpack(uint4 v, float (&f)[8], __nv_bfloat16*) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void kd_unpack(uint4 v, float (&f)[8], __half*) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}
__device__ __forceinline__ void kd_unpack(uint4 v, float (&f)[8], float*) {
  f[0] = __uint_as_float(v.x);
  f[1] = __uint_as_float(v.y);
  f[2] = __uint_as_float(v.z);
  f[3] = __uint_as_float(v.w);
}

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS)
kd_simt_gemv(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  const int lane = threadIdx.x & 31;
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  constexpr int kSlots = KD_WARPS / KD_KSPLIT;  // row slots per CTA, each KD_KSPLIT warps wide
  constexpr long long kStep = 32LL * KD_VEC;    // k covered by one load instruction of the warp
  const int warp = threadIdx.x >> 5, slot = warp / KD_KSPLIT, split = warp % KD_KSPLIT;
#if KD_KSPLIT > 1
  __shared__ float partial[kSlots][KD_KSPLIT][KD_RPW * KD_NMAX];
#endif

  // The row loop's trip count is the same for every warp of a CTA (the k split meets at barriers).
  for (long long base = static_cast<long long>(blockIdx.x) * kSlots * KD_RPW; base < m;
       base += static_cast<long long>(gridDim.x) * kSlots * KD_RPW) {
    const long long r0 = base + slot * KD_RPW;
    const KD_IN_T* a_row[KD_RPW];
#pragma unroll
    for (int r = 0; r < KD_RPW; ++r) a_row[r] = A + (r0 + r < m ? r0 + r : m - 1) * args.lda;
    float acc[KD_RPW][KD_NMAX];
#pragma unroll
    for (int r = 0; r < KD_RPW; ++r)
#pragma unroll
      for (int j = 0; j < KD_NMAX; ++j) acc[r][j] = 0.f;

    for (long long k0 = (split * KD_UNROLL * 32LL + lane) * KD_VEC; r0 < m && k0 < k; k0 += kStep * KD_UNROLL * KD_KSPLIT) {
      uint4 av[KD_UNROLL][KD_RPW];
#pragma unroll
      for (int u = 0; u < KD_UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < KD_RPW; ++r)
          av[u][r] = k0 + u * kStep < k ? kd_load_stream(a_row[r] + k0 + u * kStep) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < KD_UNROLL; ++u) {
        const long long kk = k0 + u * kStep;
        if (kk >= k) break;
        float fa[KD_RPW][8];
#pragma unroll
        for (int r = 0; r < KD_RPW; ++r) kd_unpack(av[u][r], fa[r], static_cast<KD_IN_T*>(nullptr));
#pragma unroll
        for (int j = 0; j < KD_NMAX; ++j) {
          if (j >= n) break;
          float fb[8];
          kd_unpack(__ldg(reinterpret_cast<const uint4*>(B + j * args.ldb + kk)), fb, static_cast<KD_IN_T*>(nullptr));
#pragma unroll
          for (int r = 0; r < KD_RPW; ++r)
#pragma unroll
            for (int e = 0; e < KD_VEC; ++e) acc[r][j] = fmaf(fa[r][e], fb[e], acc[r][j]);
        }
      }
    }

#pragma unroll
    for (int r = 0; r < KD_RPW; ++r)
#pragma unroll
      for (int j = 0; j < KD_NMAX; ++j)
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
#if KD_KSPLIT > 1
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < KD_RPW; ++r)
#pragma unroll
        for (int j = 0; j < KD_NMAX; ++j) partial[slot][split][r * KD_NMAX + j] = acc[r][j];
    }
    __syncthreads();
    if (split == 0 && lane < KD_RPW * KD_NMAX) {
      float sum = 0.f;
#pragma unroll
      for (int s = 0; s < KD_KSPLIT; ++s) sum += partial[slot][s][lane];
      kd_epilogue(args, C, r0 + lane / KD_NMAX, lane % KD_NMAX, sum);
    }
    __syncthreads();
#else
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < KD_RPW; ++r)
#pragma unroll
        for (int j = 0; j < KD_NMAX; ++j) kd_epilogue(args, C, r0 + r, j, acc[r][j]);
    }
#endif
  }
}
