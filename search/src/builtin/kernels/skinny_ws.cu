// Family skinny_ws: C = alpha * A^T B (+ beta C) (+ bias) for ta=T tb=N, f16/bf16 inputs, n <= 16,
// f32 accumulate on tensor cores, sm_90a. Decode GEMMs at up to 16 tokens: A, the weight, is read
// once; the work is shaped so that its stream never waits for the math (session 29's lab,
// tools/dev/decode_lab/skinny_xws.cu):
//  - warp specialization: warpgroups 0-1 are 8 producer warps (`setmaxnreg` down to 88 registers),
//    warpgroups 2-3 are 8 consumer warps (up to 168). Producer p feeds consumer p only;
//  - consumer c owns the k slices c, c + 8, ... of 512 elements and holds the tokens' m16n8k16 A
//    fragments for its slice in registers (128 per lane), loaded once per kernel when k <= 4096;
//  - a unit is 8 rows of A (an "octet") x one 512-k slice. Producer p reads it with 16-byte
//    ld.global (each instruction 512 contiguous bytes of one row; two halves of 8 loads per lane,
//    one or two in flight) into a KD_STAGES ring of KD_STAGE_K-wide stages, and arrives on the
//    stage's `full` mbarrier; the consumer waits on it, reads its B fragments (row g, 16-byte chunks
//    4q + t, rows 64 bytes off a 128-byte boundary: conflict-free), runs the mmas (the 16 tokens as
//    M, the 8 rows as N) and releases the stage on `empty`;
//  - persistent CTAs (one per SM) walk row blocks of 8 * KD_OCTETS rows round robin. The consumers'
//    partial sums for a block go into that block's slot of a ring of 4 accumulators (shared-memory
//    f32 atomics, block_ring.cuh); the consumer that arrives last finishes the block (epilogue,
//    zeroes the slot) and advances the slot's generation, which a consumer 4 blocks ahead waits for:
//    no CTA barrier.
// The shared memory is kept small on purpose: loads in flight land in L1, which it is carved from
// (session 29: the same kernel with 70 / 140 / 210 KB streamed at 89 / 85 / 76% of a plain read).
// Requires k, lda and ldb multiples of 8 and 16-byte aligned A and B (the host rules check them).
//
// Named parameters:
//   KD_IN_T (__half, __nv_bfloat16), KD_OUT_T (those or float)   KD_STAGE_K 256 | 512 (k per stage)
//   KD_STAGES ring depth (2..4)   KD_OCTETS octets per row block (1..4)   KD_PDL 0|1
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1
// Plan: grid = [min(ceil(m / (8 * KD_OCTETS)), SMs), 1, batch], block = [512],
//   smem = 8 * KD_STAGES * 8 * (2 * KD_STAGE_K + 64) + 4 * KD_OCTETS * 512 + 64 + 16 * 8 * KD_STAGES.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "c_epilogue.cuh"
#include "mma_m16n8k16.cuh"
#include "load_stream.cuh"
#include "bulk_copy.cuh"

#define KD_RING 4
#define KD_PAIRS 8
#define KD_SLICE 512
#define KD_PH (KD_STAGE_K / 256)      // producer halves (8 loads per lane) per stage
#define KD_SPU (KD_SLICE / KD_STAGE_K)  // stages per unit
#define KD_ROW (2 * KD_STAGE_K + 64)  // a row's piece + 64 bytes: the 8 lanes of a 16-byte phase hit 8 bank groups
#define KD_STAGE (8 * KD_ROW)

#include "block_ring.cuh"

extern "C" __global__ void __launch_bounds__(512, 1) kd_skinny_ws(kd_gemm_args args) {
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
  // A CTA's counts fit in 32 bits (its units are at most m / 8 / SMs * k / 4096); 32-bit index math
  // leaves the consumers' registers to the tokens.
  const int my_blocks = blockIdx.x < nblk ? static_cast<int>((nblk - 1 - blockIdx.x) / gridDim.x + 1) : 0;
  const int upb = my_slices * KD_OCTETS;  // units per row block
  const int units = my_blocks * upb;
  auto first_row = [&](int j) { return (blockIdx.x + static_cast<long long>(j) * gridDim.x) * rows_per_block; };

  if (producer) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 88;");
    // Half h: unit h / 2 (row block j, slice si, octet o), 256-k half h % 2 of its slice.
    auto load = [&](uint4 (&w)[8], int h) {
      if (h >= 2 * units) return;
      const int u = h >> 1, j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
      const long long kl = (pair + static_cast<long long>(si) * KD_PAIRS) * KD_SLICE + (h & 1) * 256 + 8 * lane;
      const long long row0 = first_row(j) + 8 * o;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const long long row = row0 + jj < m ? row0 + jj : m - 1;  // a repeated row's sums are dropped
        w[jj] = kl < k ? kd_load_stream(A + row * args.lda + kl) : zero;
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

  asm volatile("setmaxnreg.inc.sync.aligned.u32 168;");
  const int g = lane >> 2, t = lane & 3;
  auto slot_wait = [&](int j) { kd_ring_wait(gen, j, lane); };
  auto arrive = [&](int j) { kd_ring_arrive(args, C, ring, cnt, gen, j, first_row, lane, KD_PAIRS); };
  if (units == 0) {  // a consumer with no k slice still counts in every block's arrivals
    for (int j = 0; j < my_blocks; ++j) {
      slot_wait(j);
      arrive(j);
    }
    return;
  }

  uint4 xa[16], xb[16];  // tokens g and g + 8 at 16-byte chunks 4q + t of the slice
  long long cur_slice = -1;
#pragma unroll 1
  for (int u = 0; u < units; ++u) {
    const int j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    if (r == 0) slot_wait(j);
    const long long s = pair + static_cast<long long>(si) * KD_PAIRS;
    if (s != cur_slice) {
      cur_slice = s;
#pragma unroll
      for (int q = 0; q < 16; ++q) {
        const long long kk = s * KD_SLICE + 8 * (4 * q + t);
        xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
        xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
      }
    }
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int c = 0; c < KD_SPU; ++c) {
      const int p = u * KD_SPU + c, st = p % KD_STAGES;
      kd_mbar_wait(full + st, static_cast<unsigned>((p / KD_STAGES) & 1));
      const unsigned char* tile = stages + st * KD_STAGE + g * KD_ROW + t * 16;
#pragma unroll
      for (int qq = 0; qq < KD_STAGE_K / 32; ++qq) {
        const int q = c * (KD_STAGE_K / 32) + qq;
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
