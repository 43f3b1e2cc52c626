// LAB KERNEL (session 29); it became the builtin family skinny_ws (search/src/builtin/kernels/skinny_ws.cu),
// which drops the ablations (KD_ABL) and the register split parameters: C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32
// accumulate (beta and bias as the families), sm_90a. The lab's n = 16 kernels (xreg, xpipe, xring,
// xflat) showed that 16-byte ld.global into registers streams A at 90-95% of a plain read when a warp
// does nothing else, and that a warp which also runs the mmas issues its next loads late (74-89%).
// So the two jobs go to different warps:
//  - warpgroups 0-1 (8 producer warps, `setmaxnreg` down to KD_PREGS) stream A: producer p copies
//    8 rows x 1 KB (one 512-k slice of consumer p) per unit, as two halves of 8 loads per lane (each
//    instruction 512 contiguous bytes), always one or two halves in flight, into a KD_STAGES ring of
//    pair p, and arrives on the stage's `full` mbarrier;
//  - warpgroups 2-3 (8 consumer warps, `setmaxnreg` up to KD_CREGS) hold the tokens' mma fragments
//    for their 512-k slice in registers (128 per lane), wait on `full`, run 32 m16n8k16 mmas per unit
//    (the 16 tokens as M, the 8 rows as N), free the stage on `empty`, and add their partial sums into
//    a ring of per-row-block accumulators (shared-memory atomics); the last consumer to arrive
//    finishes the block (epilogue), as in skinny_xring;
//  - persistent CTAs walk row blocks of 8 * KD_OCTETS rows round robin; consumer c owns slices
//    c, c + 8, ... of 512 (the tokens are loaded once per kernel when k <= 4096).
// KD_SK = 256 makes a stage half a unit (8 rows x 512 bytes): the shared memory a stage takes comes
// out of L1, where the loads in flight land (session 29: the same kernel with 70 / 140 / 210 KB of
// shared memory streamed at 89 / 85 / 76% of a streaming read).
// Plan: grid = [min(row blocks, SMs), 1, batch], block = [512],
//   smem = 8 * KD_STAGES * 8 * (2 * KD_SK + 64) + KD_RING * KD_OCTETS * 512 + (2 * KD_RING + 8) * 4
//          + 8 * KD_STAGES * 16.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_OCTETS 1
#define KD_STAGES 3
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_RING
#define KD_RING 4
#endif
#ifndef KD_ABL
#define KD_ABL 0  // lab ablations (bits): 1 the tokens are not loaded (zeros), 2 A is not loaded (zeros)
#endif
#ifndef KD_PREGS
#define KD_PREGS 88   // 256 x 88 + 256 x 168 = 65536
#endif
#ifndef KD_CREGS
#define KD_CREGS 168
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"
#include "../../../search/src/builtin/kernels/bulk_copy.cuh"

#ifndef KD_SK
#define KD_SK 512                 // k per stage: 512 (a whole unit) or 256 (half a unit, half the shared memory)
#endif
#define KD_PH (KD_SK / 256)       // producer halves (8 loads per lane) per stage
#define KD_SPU (512 / KD_SK)      // stages per unit
#define KD_ROW (2 * KD_SK + 64)   // a row's piece + 64 bytes: the 8 lanes of a 16-byte phase hit 8 bank groups
#define KD_STAGE (8 * KD_ROW)
#define KD_PAIRS 8
#define KD_SLICE 512

extern "C" __global__ void __launch_bounds__(512, 1) kd_skinny_xws(kd_gemm_args args) {
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
  const bool producer = warp < KD_PAIRS;
  const int pair = producer ? warp : warp - KD_PAIRS;
  unsigned char* stages = smem + pair * KD_STAGES * KD_STAGE;
  float* ring = reinterpret_cast<float*>(smem + KD_PAIRS * KD_STAGES * KD_STAGE);
  int* cnt = reinterpret_cast<int*>(ring + KD_RING * KD_OCTETS * 128);
  int* gen = cnt + KD_RING;
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(gen + KD_RING + 8);
  unsigned long long* full = bars + pair * 2 * KD_STAGES;
  unsigned long long* empty = full + KD_STAGES;
  for (int i = threadIdx.x; i < KD_RING * KD_OCTETS * 128; i += blockDim.x) ring[i] = 0.f;
  if (threadIdx.x < 2 * KD_RING) cnt[threadIdx.x] = 0;
  if (threadIdx.x < KD_PAIRS * 2 * KD_STAGES) kd_mbar_init(bars + threadIdx.x, 32);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  const uint4 zero = make_uint4(0, 0, 0, 0);

  const long long rows_per_block = 8 * KD_OCTETS;
  const long long nblk = (m + rows_per_block - 1) / rows_per_block;
  const long long nslices = (k + KD_SLICE - 1) / KD_SLICE;
  const int my_slices = pair < nslices ? static_cast<int>((nslices - 1 - pair) / KD_PAIRS + 1) : 0;
  // Per-CTA counts fit in 32 bits (a CTA's units are at most m / 8 * k / 512); 32-bit index math
  // keeps the consumers' registers for the tokens.
  const int my_blocks = blockIdx.x < nblk ? static_cast<int>((nblk - 1 - blockIdx.x) / gridDim.x + 1) : 0;
  const int upb = my_slices * KD_OCTETS;  // units per row block
  const int units = my_blocks * upb;

  if (producer) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(KD_PREGS));
    // Half-unit h: unit h / 2, the 256-k half h % 2 of its slice.
    auto load = [&](uint4 (&w)[8], int h) {
      if (h >= 2 * units) return;
      const int u = h >> 1, j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
      const long long kl = (pair + si * KD_PAIRS) * KD_SLICE + (h & 1) * 256 + 8 * lane;
      const long long row0 = (blockIdx.x + j * gridDim.x) * rows_per_block + 8 * o;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const long long row = row0 + jj < m ? row0 + jj : m - 1;
        w[jj] = kl < k && (KD_ABL & 2) == 0 ? kd_load_stream(A + row * args.lda + kl) : zero;
      }
    };
    auto put = [&](uint4 (&w)[8], int h) {
      const int p = h / KD_PH, s = p % KD_STAGES;  // stage piece p
      if (h % KD_PH == 0 && p >= KD_STAGES) kd_mbar_wait(empty + s, static_cast<unsigned>((p / KD_STAGES - 1) & 1));
      unsigned char* st = stages + s * KD_STAGE + (h % KD_PH) * 512 + lane * 16;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) *reinterpret_cast<uint4*>(st + jj * KD_ROW) = w[jj];
      if (h % KD_PH == KD_PH - 1) kd_mbar_arrive(full + s);  // release: this lane's stores of the piece
      load(w, h + 2);
    };
    uint4 w0[8], w1[8];
    load(w0, 0);
    load(w1, 1);
#pragma unroll 1
    for (int h = 0; h < 2 * units; h += 2) {
      put(w0, h);
      put(w1, h + 1);
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(KD_CREGS));
  const int g = lane >> 2, t = lane & 3;
  auto slot_wait = [&](int j) {  // the slot is free once the block KD_RING before j is finished
    if (lane == 0)
      while (*reinterpret_cast<volatile int*>(gen + j % KD_RING) != static_cast<int>(j / KD_RING)) __nanosleep(32);
    __syncwarp();
  };
  auto arrive = [&](int j) {  // the last consumer to arrive finishes row block j
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128;
    __threadfence_block();
    int old = 0;
    if (lane == 0) old = atomicAdd(cnt + j % KD_RING, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old != KD_PAIRS - 1) return;
    __threadfence_block();
    const long long rb = blockIdx.x + j * gridDim.x;
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
      *reinterpret_cast<volatile int*>(gen + j % KD_RING) = static_cast<int>(j / KD_RING) + 1;
    }
    __syncwarp();
  };
  if (units == 0) {  // a consumer with no k slice still counts in every block's arrivals
    for (int j = 0; j < my_blocks; ++j) {
      slot_wait(j);
      arrive(j);
    }
    return;
  }

  uint4 xa[16], xb[16];  // tokens g and g + 8 at chunks 4q + t of the slice
  long long cur_slice = -1;
#pragma unroll 1
  for (int u = 0; u < units; ++u) {
    const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    if (r == 0) slot_wait(j);
    const long long s = pair + si * KD_PAIRS;
    if (s != cur_slice) {
      cur_slice = s;
#pragma unroll
      for (int q = 0; q < 16; ++q) {
        const long long kk = s * KD_SLICE + 8 * (4 * q + t);
        xa[q] = (kk < k && g < n && (KD_ABL & 1) == 0) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
        xb[q] = (kk < k && g + 8 < n && (KD_ABL & 1) == 0) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
      }
    }
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int c = 0; c < KD_SPU; ++c) {
      const int p = u * KD_SPU + c, st = p % KD_STAGES;
      kd_mbar_wait(full + st, static_cast<unsigned>((p / KD_STAGES) & 1));
      const unsigned char* tile = stages + st * KD_STAGE + g * KD_ROW + t * 16;
#pragma unroll
      for (int qq = 0; qq < KD_SK / 32; ++qq) {
        const int q = c * (KD_SK / 32) + qq;
        const uint4 b = *reinterpret_cast<const uint4*>(tile + qq * 64);
        kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
        kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
      }
      kd_mbar_arrive(empty + st);  // this lane's reads of the stage are done (their values are in the mmas)
    }
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128 + o * 128;
#pragma unroll
    for (int i = 0; i < 4; ++i) atomicAdd(acc_b + i * 32 + lane, acc[0][i] + acc[1][i]);
    if (r == upb - 1) arrive(j);
  }
}
