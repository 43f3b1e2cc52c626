// LAB KERNEL, not a family (session 29): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16,
// k <= 256 * KD_CONS, f32 accumulate (beta and bias as the families), sm_90.
// What the lab's n = 16 kernels taught (docs/kernel-notes.md, session 29): loads in flight through
// registers land in L1, so a kernel that also holds shared memory streams less; producer warps that
// stream A through registers reach only 64 KB in flight per SM (their share of the register file),
// and their handoffs to the mma warps cost more than the math. Here the TMA unit streams A, which
// needs neither registers nor L1:
//  - warp 0, the producer: for each octet of rows (8 rows, round robin over persistent CTAs) lanes 0-7
//    bulk-copy one whole row each (k elements) into a KD_STAGES ring of 8-row stages, on the stage's
//    `full` mbarrier (expect_tx); a stage is reused after every consumer released it (`empty`);
//  - warps 1..KD_CONS, the consumers: consumer c holds the tokens' m16n8k16 fragments for k slice c
//    (256 elements) in registers, loaded once; per stage it reads its slice of the 8 rows as B
//    fragments (row g, 16-byte chunks 4q + t: conflict-free with rows 64 bytes off a 128-byte
//    boundary), runs 16 mmas, releases the stage, and adds its partial sums into the octet's slot of a
//    ring of accumulators; the last consumer to arrive finishes the octet (skinny_xring's ring).
// Plan: grid = [min(ceil(m / 8), SMs), 1, batch], block = [32 * (1 + KD_CONS)],
//   smem = KD_STAGES * 8 * ROWB + KD_RING * 512 + (2 * KD_RING + 8) * 4 + 2 * KD_STAGES * 8,
//   ROWB = round_up(2 * k, 128) + 64 bytes.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_CONS 16
#define KD_STAGES 3
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_RING
#define KD_RING 4
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/bulk_copy.cuh"

extern "C" __global__ void __launch_bounds__(32 * (1 + KD_CONS), 1) kd_skinny_xtma(kd_gemm_args args) {
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
  const unsigned rowb = static_cast<unsigned>((2 * k + 127) / 128 * 128 + 64);
  const unsigned stage_bytes = 8 * rowb;
  float* ring = reinterpret_cast<float*>(smem + KD_STAGES * stage_bytes);
  int* cnt = reinterpret_cast<int*>(ring + KD_RING * 128);
  int* gen = cnt + KD_RING;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(gen + KD_RING + 8);
  unsigned long long* empty = full + KD_STAGES;
  for (int i = threadIdx.x; i < KD_RING * 128; i += blockDim.x) ring[i] = 0.f;
  if (threadIdx.x < 2 * KD_RING) cnt[threadIdx.x] = 0;
  if (threadIdx.x < KD_STAGES) kd_mbar_init(full + threadIdx.x, 1);
  if (threadIdx.x >= 32 && threadIdx.x < 32 + KD_STAGES) kd_mbar_init(empty + threadIdx.x - 32, KD_CONS);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();

  const long long noct = (m + 7) / 8;
  const int my_oct = blockIdx.x < noct ? static_cast<int>((noct - 1 - blockIdx.x) / gridDim.x + 1) : 0;

  if (warp == 0) {  // the producer
    for (int i = 0; i < my_oct; ++i) {
      const int s = i % KD_STAGES;
      if (i >= KD_STAGES) kd_mbar_wait(empty + s, static_cast<unsigned>((i / KD_STAGES - 1) & 1));
      if (lane == 0) kd_mbar_expect_tx(full + s, static_cast<unsigned>(8 * 2 * k));
      __syncwarp();
      if (lane < 8) {
        long long row = (blockIdx.x + static_cast<long long>(i) * gridDim.x) * 8 + lane;
        row = row < m ? row : m - 1;  // a repeated row keeps the stage's byte count; its sums are dropped
        kd_bulk_copy(smem + s * stage_bytes + lane * rowb, A + row * args.lda, static_cast<unsigned>(2 * k), full + s);
      }
    }
    return;
  }

  const int c = warp - 1, g = lane >> 2, t = lane & 3;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  uint4 xa[8], xb[8];  // tokens g and g + 8 at chunks 4q + t of slice c
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const long long kk = c * 256LL + 8 * (4 * q + t);
    xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
    xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
  }
  for (int i = 0; i < my_oct; ++i) {
    const int s = i % KD_STAGES, slot = i % KD_RING;
    if (lane == 0)  // the slot is free once the octet KD_RING before this one is finished
      while (*reinterpret_cast<volatile int*>(gen + slot) != i / KD_RING) __nanosleep(32);
    __syncwarp();
    kd_mbar_wait(full + s, static_cast<unsigned>((i / KD_STAGES) & 1));
    const unsigned char* tile = smem + s * stage_bytes + g * rowb + (c * 32 + t) * 16;
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      // Chunks past k hold another row's bytes or nothing: read as zero (the tokens there are zero,
      // but a NaN times zero is not).
      const uint4 b = c * 256LL + 8 * (4 * q + t) < k ? *reinterpret_cast<const uint4*>(tile + q * 64) : zero;
      kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
      kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
    }
    __syncwarp();
    if (lane == 0) kd_mbar_arrive(empty + s);  // the warp's reads of the stage are done
    float* acc_b = ring + slot * 128;
#pragma unroll
    for (int e = 0; e < 4; ++e) atomicAdd(acc_b + e * 32 + lane, acc[0][e] + acc[1][e]);
    // Arrive; the last consumer to arrive finishes the octet.
    __threadfence_block();
    int old = 0;
    if (lane == 0) old = atomicAdd(cnt + slot, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old == KD_CONS - 1) {
      __threadfence_block();
      const long long row0 = (blockIdx.x + static_cast<long long>(i) * gridDim.x) * 8;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float sum = *reinterpret_cast<volatile float*>(acc_b + e * 32 + lane);
        acc_b[e * 32 + lane] = 0.f;
        // c0, c1: token (lane >> 2), rows 2(lane & 3) and +1 of the octet; c2, c3: token + 8.
        kd_epilogue(args, C, row0 + 2 * (lane & 3) + (e & 1), (lane >> 2) + (e >= 2 ? 8 : 0), sum);
      }
      __syncwarp();
      __threadfence_block();
      if (lane == 0) {
        cnt[slot] = 0;
        __threadfence_block();
        *reinterpret_cast<volatile int*>(gen + slot) = i / KD_RING + 1;
      }
    }
    __syncwarp();
  }
}
