// Family simt_tiled: the general GEMM for every key the shim intercepts (any transposes, f16/bf16/
// f32 in any legal combination, strided batch, beta, bias) on CUDA cores with fp32 accumulation,
// so strict-fp32 precision classes hold. It is the family of last resort and the seed every search
// starts from: register blocking (KD_TM x KD_TN outputs per thread), tiles staged through shared
// memory with double buffering (the next k tile is loaded into registers while the current one is
// used), global loads mapped so that consecutive threads read consecutive addresses whatever the
// layout.
//
// Named parameters:
//   KD_A_T, KD_B_T, KD_C_T element types   KD_TA, KD_TB 0 = N, 1 = T
//   KD_BM, KD_BN, KD_BK tile   KD_TM, KD_TN per-thread block (BM % TM == 0, BN % TN == 0)
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1
// Plan: grid = [ceil(m/BM), ceil(n/BN), batch], block = [(BM/TM)*(BN/TN)], smem 0.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_A_T
#define KD_A_T float
#define KD_B_T float
#define KD_C_T float
#define KD_TA 0
#define KD_TB 0
#define KD_BM 64
#define KD_BN 64
#define KD_BK 16
#define KD_TM 4
#define KD_TN 4
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif

#define KD_THREADS ((KD_BM / KD_TM) * (KD_BN / KD_TN))

#include "c_epilogue.cuh"

// Loads the (rows x KD_BK) tile of op(X) starting at (row0, k0) into registers, KD_PER per thread.
// op(X)(r, kk) lives at X[r + kk*ld] when not transposed (rows contiguous) and X[kk + r*ld] when
// transposed (k contiguous); the thread mapping follows the contiguous direction.
template <typename T, int TRANS, int ROWS>
struct kd_tile_loader {
  static constexpr int kPer = (ROWS * KD_BK + KD_THREADS - 1) / KD_THREADS;
  float v[kPer];
  __device__ __forceinline__ void load(const T* X, long long ld, long long nrows, long long k,
                                       long long row0, long long k0) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = threadIdx.x + i * KD_THREADS;
      const int r = TRANS ? e / KD_BK : e % ROWS;
      const int kk = TRANS ? e % KD_BK : e / ROWS;
      const long long gr = row0 + r, gk = k0 + kk;
      float x = 0.f;
      if (e < ROWS * KD_BK && gr < nrows && gk < k) x = kd_to_float(TRANS ? X[gk + gr * ld] : X[gr + gk * ld]);
      v[i] = x;
    }
  }
  __device__ __forceinline__ void store(float (*S)[ROWS + 4]) const {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int e = threadIdx.x + i * KD_THREADS;
      if (e < ROWS * KD_BK) {
        const int r = TRANS ? e / KD_BK : e % ROWS;
        const int kk = TRANS ? e % KD_BK : e / ROWS;
        S[kk][r] = v[i];
      }
    }
  }
};

extern "C" __global__ void __launch_bounds__(KD_THREADS) kd_simt_tiled(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  // op(A) is m x k; op(B) is k x n, handled as its transpose (n x k) so both tiles are "rows by k":
  // op(B)(kk, j) = B[kk + j*ldb] when tb = N, i.e. row j of B^T is k-contiguous (TRANS = 1).
  __shared__ float As[2][KD_BK][KD_BM + 4];
  __shared__ float Bs[2][KD_BK][KD_BN + 4];
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_A_T* A = static_cast<const KD_A_T*>(args.a) + z * args.stride_a;
  const KD_B_T* B = static_cast<const KD_B_T*>(args.b) + z * args.stride_b;
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
  const long long row0 = static_cast<long long>(blockIdx.x) * KD_BM;
  const long long col0 = static_cast<long long>(blockIdx.y) * KD_BN;
  const int tx = threadIdx.x % (KD_BN / KD_TN);
  const int ty = threadIdx.x / (KD_BN / KD_TN);

  kd_tile_loader<KD_A_T, KD_TA, KD_BM> la;
  kd_tile_loader<KD_B_T, KD_TB ? 0 : 1, KD_BN> lb;
  float acc[KD_TM][KD_TN];
#pragma unroll
  for (int i = 0; i < KD_TM; ++i)
#pragma unroll
    for (int j = 0; j < KD_TN; ++j) acc[i][j] = 0.f;

  la.load(A, args.lda, m, k, row0, 0);
  lb.load(B, args.ldb, n, k, col0, 0);
  la.store(As[0]);
  lb.store(Bs[0]);
  __syncthreads();
  int buf = 0;
  for (long long k0 = 0; k0 < k; k0 += KD_BK) {
    const bool more = k0 + KD_BK < k;
    if (more) {
      la.load(A, args.lda, m, k, row0, k0 + KD_BK);
      lb.load(B, args.ldb, n, k, col0, k0 + KD_BK);
    }
#pragma unroll
    for (int kk = 0; kk < KD_BK; ++kk) {
      float a[KD_TM], b[KD_TN];
#pragma unroll
      for (int i = 0; i < KD_TM; ++i) a[i] = As[buf][kk][ty + i * (KD_BM / KD_TM)];
#pragma unroll
      for (int j = 0; j < KD_TN; ++j) b[j] = Bs[buf][kk][tx + j * (KD_BN / KD_TN)];
#pragma unroll
      for (int i = 0; i < KD_TM; ++i)
#pragma unroll
        for (int j = 0; j < KD_TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) {
      la.store(As[buf ^ 1]);
      lb.store(Bs[buf ^ 1]);
    }
    __syncthreads();
    buf ^= 1;
  }

#pragma unroll
  for (int i = 0; i < KD_TM; ++i) {
    const long long r = row0 + ty + i * (KD_BM / KD_TM);
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < KD_TN; ++j) {
      const long long c = col0 + tx + j * (KD_BN / KD_TN);
      if (c >= n) continue;
      float out = args.alpha * acc[i][j];
      KD_C_T* dst = C + r + c * args.ldc;
      kd_finish_c(args, dst, r, out);
    }
  }
}
