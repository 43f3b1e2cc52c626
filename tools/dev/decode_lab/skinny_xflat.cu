// LAB KERNEL, not a family: it lost to cuBLAS (session 29, H100, lab_xflat.json: 0.80-1.00x, 56-89% of a
// streaming read; the token fragments read from shared memory per unit cost more than the second unit
// in flight won; docs/kernel-notes.md): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32
// accumulate (beta and bias as the families). The lab's line so far (docs/kernel-notes.md, session
// 29): persistent CTAs that stream A with ld.global into registers reach 90-95% of a streaming read
// when they do no math, and 75-89% with it, because each warp had one unit of A in flight and issued
// the next only after its mmas. Here two units are in flight per warp while it computes one:
//  - persistent CTAs walk row blocks of 8 * KD_OCTETS rows round robin; warp w owns k slices of 256
//    (w, w + KD_WARPS, ...); a unit is 8 rows x 512 bytes of one slice, one 16-byte load per lane and
//    row (each load instruction reads 512 contiguous bytes);
//  - the tokens' mma fragments for the warp's slice sit in warp-private shared memory in fragment
//    order (16 x 16 bytes per lane, conflict-free), written when the slice changes (once per kernel
//    when k <= 256 * KD_WARPS), so the registers hold two units of A instead;
//  - a unit goes registers -> warp-private tile -> m16n8k16 B fragments (8 rows as the mma's N, the
//    16 tokens as its M); the warps' partial sums meet in a ring of KD_RING per-block accumulators
//    (shared-memory f32 atomics), the last warp to arrive finishes the block; no CTA barrier.
// Plan: grid = [min(row blocks, SMs), 1, batch], block = [32 * KD_WARPS],
//   smem = KD_WARPS * (8 * 528 + 8192) + KD_RING * (KD_OCTETS * 512 + 8).
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

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"

#define KD_TILE_ROW 528  // 512 bytes of a row's slice + 16: lanes reading 8 rows hit distinct banks
#define KD_TILE (8 * KD_TILE_ROW)
#define KD_TOK 8192      // a warp's token fragments: 16 uint4 per lane

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, 1)
kd_skinny_xflat(kd_gemm_args args) {
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
  unsigned char* tile = smem + warp * (KD_TILE + KD_TOK);
  uint4* tok = reinterpret_cast<uint4*>(tile + KD_TILE);  // tok[q * 2 + h][lane], h: tokens g / g + 8
  float* ring = reinterpret_cast<float*>(smem + KD_WARPS * (KD_TILE + KD_TOK));
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
  const long long my_blocks = blockIdx.x < nblk ? (nblk - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const long long upb = static_cast<long long>(my_slices) * KD_OCTETS;  // units per block
  const long long units = my_blocks * upb;

  // Unit u: row block j = u / upb, slice si, octet o.
  auto load = [&](uint4 (&w)[8], long long u) {
    if (u >= units) return;
    const long long j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    const long long kl = (warp + si * KD_WARPS) * 256 + 8 * lane;
    const long long row0 = (blockIdx.x + j * gridDim.x) * rows_per_block + 8 * o;
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const long long row = row0 + jj < m ? row0 + jj : m - 1;
      w[jj] = kl < k ? kd_load_stream(A + row * args.lda + kl) : zero;
    }
  };
  auto slot_wait = [&](long long j) {  // the slot is free once the block KD_RING before j is finished
    if (lane == 0)
      while (*reinterpret_cast<volatile int*>(gen + j % KD_RING) != static_cast<int>(j / KD_RING)) __nanosleep(32);
    __syncwarp();
  };
  auto arrive = [&](long long j) {  // the last warp to arrive finishes row block j
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128;
    __threadfence_block();
    int old = 0;
    if (lane == 0) old = atomicAdd(cnt + j % KD_RING, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old != KD_WARPS - 1) return;
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

  if (units == 0) {  // a warp with no k slice still counts in every block's arrivals
    for (long long j = 0; j < my_blocks; ++j) {
      slot_wait(j);
      arrive(j);
    }
    return;
  }

  long long cur_slice = -1;
  // One unit: w (its loads) -> tile; w refilled with unit u + 2; the mmas; the block's bookkeeping.
  auto step = [&](uint4 (&w)[8], long long u) {
    const long long j = u / upb, r = u % upb, si = r / KD_OCTETS, o = r % KD_OCTETS;
    if (r == 0) slot_wait(j);
    const long long s = warp + si * KD_WARPS;
    if (s != cur_slice) {  // the tokens' fragments: tokens g and g + 8 at chunks 4q + t
      cur_slice = s;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const long long kk = s * 256 + 8 * (4 * q + t);
        tok[(2 * q) * 32 + lane] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
        tok[(2 * q + 1) * 32 + lane] =
            (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
      }
    }
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) *reinterpret_cast<uint4*>(tile + jj * KD_TILE_ROW + lane * 16) = w[jj];
    __syncwarp();
    load(w, u + 2);  // in flight with unit u + 1 while this unit's mmas run
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const uint4 b = *reinterpret_cast<const uint4*>(tile + g * KD_TILE_ROW + (4 * q + t) * 16);
      const uint4 xa = tok[(2 * q) * 32 + lane], xb = tok[(2 * q + 1) * 32 + lane];
      kd_mma(acc[q & 1], xa.x, xb.x, xa.y, xb.y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
      kd_mma(acc[q & 1], xa.z, xb.z, xa.w, xb.w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
    }
    float* acc_b = ring + (j % KD_RING) * KD_OCTETS * 128 + o * 128;
#pragma unroll
    for (int i = 0; i < 4; ++i) atomicAdd(acc_b + i * 32 + lane, acc[0][i] + acc[1][i]);
    __syncwarp();  // the tile is read before the next unit overwrites it
    if (r == upb - 1) arrive(j);
  };

  uint4 w0[8], w1[8];
  load(w0, 0);
  load(w1, 1);
#pragma unroll 1
  for (long long u = 0; u < units; u += 2) {
    step(w0, u);
    if (u + 1 < units) step(w1, u + 1);
  }
}
