// LAB KERNEL, not a family (session 29): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32
// accumulate (beta and bias as the families). The lab's n = 16 kernels that passed A through a
// shared-memory tile got slower with every stage they added (docs/kernel-notes.md, session 29): the
// shared memory they take shrinks L1, and L1 is where a load in flight lands. This one has no tile:
//  - each lane loads straight into its m16n8k16 B fragments: lane (g, t) reads row g of the octet at
//    16-byte chunks 4q + t of the warp's 256-k slice (q = 0..7), so one load instruction reads 64
//    contiguous bytes of each of 8 rows and the warp's 8 instructions read the rows' 512 bytes whole;
//  - KD_DEPTH (1 or 2) units of 8 rows are in flight per warp while it runs the previous unit's
//    16 mmas; the tokens' fragments for the slice stay in registers (loaded once when k <= 256 x warps);
//  - persistent CTAs walk row blocks of 8 * KD_OCTETS rows round robin, warps split k in 256-slices,
//    and the partial sums meet in skinny_xring's ring of per-block accumulators (no CTA barrier).
// Plan: grid = [min(row blocks, SMs * CTAs per SM), 1, batch], block = [32 * KD_WARPS],
//   smem = KD_RING * KD_OCTETS * 512 + 2 * KD_RING * 4.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_WARPS 16
#define KD_OCTETS 1
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_RING
#define KD_RING 4
#endif
#ifndef KD_DEPTH
#define KD_DEPTH 1
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, 1) kd_skinny_xdirect(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  float* ring = reinterpret_cast<float*>(smem);
  int* cnt = reinterpret_cast<int*>(ring + KD_RING * KD_OCTETS * 128);
  int* gen = cnt + KD_RING;
  for (int i = threadIdx.x; i < KD_RING * KD_OCTETS * 128; i += blockDim.x) ring[i] = 0.f;
  if (threadIdx.x < 2 * KD_RING) cnt[threadIdx.x] = 0;
  __syncthreads();
  const uint4 zero = make_uint4(0, 0, 0, 0);

  const long long rows_per_block = 8 * KD_OCTETS;
  const long long nblk = (m + rows_per_block - 1) / rows_per_block;
  const long long nslices = (k + 255) / 256;
  const int my_slices = warp < nslices ? static_cast<int>((nslices - 1 - warp) / KD_WARPS + 1) : 0;
  const int my_blocks = blockIdx.x < nblk ? static_cast<int>((nblk - 1 - blockIdx.x) / gridDim.x + 1) : 0;
  const int upb = my_slices * KD_OCTETS;  // units per row block
  const int units = my_blocks * upb;

  auto load = [&](uint4 (&w)[8], int u) {  // unit u: row block u / upb, slice, octet; row g of the octet
    if (u >= units) return;
    const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    const long long row0 = (blockIdx.x + static_cast<long long>(j) * gridDim.x) * rows_per_block + 8 * o + g;
    const long long row = row0 < m ? row0 : m - 1;
    const KD_IN_T* p = A + row * args.lda + (warp + static_cast<long long>(si) * KD_WARPS) * 256 + 8 * t;
    const long long kl = (warp + static_cast<long long>(si) * KD_WARPS) * 256 + 8 * t;
#pragma unroll
    for (int q = 0; q < 8; ++q) w[q] = kl + 32 * q < k ? kd_load_stream(p + 32 * q) : zero;
  };
  auto slot_wait = [&](int j) {  // the slot is free once the block KD_RING before j is finished
    if (lane == 0)
      while (*reinterpret_cast<volatile int*>(gen + j % KD_RING) != j / KD_RING) __nanosleep(32);
    __syncwarp();
  };
  auto arrive = [&](int j) {  // the last warp to arrive finishes row block j
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128;
    __threadfence_block();
    int old = 0;
    if (lane == 0) old = atomicAdd(cnt + j % KD_RING, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old != KD_WARPS - 1) return;
    __threadfence_block();
    const long long rb = blockIdx.x + static_cast<long long>(j) * gridDim.x;
    for (int idx = lane; idx < KD_OCTETS * 128; idx += 32) {
      const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
      const float sum = *reinterpret_cast<volatile float*>(acc_b + idx);
      acc_b[idx] = 0.f;
      // c0, c1: token (l >> 2), rows 2(l & 3) and +1 of the octet; c2, c3: token + 8.
      kd_epilogue(args, C, rb * rows_per_block + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), sum);
    }
    __syncwarp();
    __threadfence_block();
    if (lane == 0) {
      cnt[j % KD_RING] = 0;
      __threadfence_block();
      *reinterpret_cast<volatile int*>(gen + j % KD_RING) = j / KD_RING + 1;
    }
    __syncwarp();
  };
  if (units == 0) {  // a warp with no k slice still counts in every block's arrivals
    for (int j = 0; j < my_blocks; ++j) {
      slot_wait(j);
      arrive(j);
    }
    return;
  }

  uint4 xa[8], xb[8];
  long long cur_slice = -1;
  auto step = [&](uint4 (&w)[8], int u) {
    const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    if (r == 0) slot_wait(j);
    const long long s = warp + static_cast<long long>(si) * KD_WARPS;
    if (s != cur_slice) {  // the tokens' fragments: tokens g and g + 8 at chunks 4q + t
      cur_slice = s;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const long long kk = s * 256 + 8 * (4 * q + t);
        xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
        xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
      }
    }
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, w[q].x, w[q].y, static_cast<KD_IN_T*>(nullptr));
      kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, w[q].z, w[q].w, static_cast<KD_IN_T*>(nullptr));
    }
    load(w, u + KD_DEPTH);  // w is free once its mmas are issued
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128 + o * 128;
#pragma unroll
    for (int i = 0; i < 4; ++i) atomicAdd(acc_b + i * 32 + lane, acc[0][i] + acc[1][i]);
    if (r == upb - 1) arrive(j);
  };

#if KD_DEPTH == 1
  uint4 w0[8];
  load(w0, 0);
#pragma unroll 1
  for (int u = 0; u < units; ++u) step(w0, u);
#else
  uint4 w0[8], w1[8];
  load(w0, 0);
  load(w1, 1);
#pragma unroll 1
  for (int u = 0; u < units; u += 2) {
    step(w0, u);
    if (u + 1 < units) step(w1, u + 1);
  }
#endif
}
