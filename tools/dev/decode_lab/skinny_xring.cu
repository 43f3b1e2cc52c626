// LAB KERNEL, not a family: it tied or lost to cuBLAS (session 29, H100; docs/kernel-notes.md): cp.async
// (lab_xring.json) 0.93-0.96x; KD_LDG = 1 (lab_xring_ldg.json, lab_xring_bulk.json) 0.95-1.04x and
// 1.075x at 128256 x 16, and with KD_ABL = 1 (no mma) 90-95% of a streaming read; KD_BULK = 1 0.91-1.04x.
// What it is: skinny_xpipe (same directory) without its per-row-block __syncthreads. xpipe's
// ablations on an H100 (serving regime, 14336 x 16 x 4096 bf16) put its load side alone (no mma) at
// 85% of a streaming read, and suspected the barrier: every row block lined the 16 warps up behind
// the slowest warp's loads. Here the warps never wait for each other: each adds its partial sums for
// a row block into that block's slot of a ring of KD_RING accumulators (shared-memory f32 atomics)
// and bumps the slot's arrival count; the warp that arrives last finishes the block (epilogue, zeroes
// the slot) and bumps the slot's generation, which a warp KD_RING blocks ahead waits for. The mma
// chain is split over two accumulators (xpipe with no loads at all still took 20 us at 14336 x 16;
// the dependent chain of 16 mmas per unit was the suspect).
// How A reaches the tiles: cp.async (default, KD_STAGES units in flight per warp), KD_LDG = 1 (16-byte
// ld.global into registers, one unit in flight, KD_STAGES = 1) or KD_BULK = 1 (lanes 0-7 each bulk-copy
// one row's 512 bytes, an mbarrier per stage; the lab's shapes have k % 256 == 0, the k tail is not
// handled in this mode).
// Plan: grid = [min(row blocks, SMs * CTAs per SM), 1, batch], block = [32 * KD_WARPS],
//   smem = KD_WARPS * KD_STAGES * (8 * 528 + 8) + KD_RING * KD_OCTETS * 512 + (2 * KD_RING + 8) * 4.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_WARPS 16
#define KD_OCTETS 2
#define KD_STAGES 2
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif

#ifndef KD_RING
#define KD_RING 4
#endif
#ifndef KD_ABL
#define KD_ABL 0  // lab ablations: 1 no mma, 2 no loads of A, 3 each warp reads 4 KB of one row per unit
#endif
#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"
#include "../../../search/src/builtin/kernels/bulk_copy.cuh"
#ifndef KD_BULK
#define KD_BULK 0  // 1: A by 1-D bulk copies (TMA), one 512-byte row piece per lane 0-7, an mbarrier per stage
#endif
#ifndef KD_LDG
#define KD_LDG 0  // 1: A through registers (ld.global, one unit in flight) instead of cp.async
#endif

#define KD_TILE_ROW 528  // 512 bytes of a row's slice + 16: lanes reading 8 rows hit distinct banks
#define KD_TILE (8 * KD_TILE_ROW)

__device__ __forceinline__ void kd_cp16(unsigned dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
}

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, 1)
kd_skinny_xring(kd_gemm_args args) {
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
  unsigned char* tiles = smem + warp * KD_STAGES * KD_TILE;
  const unsigned tiles_s = static_cast<unsigned>(__cvta_generic_to_shared(tiles));
  float* ring = reinterpret_cast<float*>(smem + KD_WARPS * KD_STAGES * KD_TILE);
  int* cnt = reinterpret_cast<int*>(ring + KD_RING * KD_OCTETS * 128);
  int* gen = cnt + KD_RING;
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(gen + KD_RING + 8) + warp * KD_STAGES;
#if KD_BULK
  if (lane < KD_STAGES) kd_mbar_init(bars + lane, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
  for (int i = threadIdx.x; i < KD_RING * KD_OCTETS * 128; i += blockDim.x) ring[i] = 0.f;
  if (threadIdx.x < 2 * KD_RING) cnt[threadIdx.x] = 0;
  __syncthreads();
  const uint4 zero = make_uint4(0, 0, 0, 0);

  const long long rows_per_block = 8 * KD_OCTETS;
  const long long nblk = (m + rows_per_block - 1) / rows_per_block;
  const long long nslices = (k + 255) / 256;
  const int my_slices = warp < nslices ? static_cast<int>((nslices - 1 - warp) / KD_WARPS + 1) : 0;
  const long long my_blocks = blockIdx.x < nblk ? (nblk - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const long long units_per_block = static_cast<long long>(my_slices) * KD_OCTETS;
  const long long units = my_blocks * units_per_block;

  // Unit u of this warp: its row block j = u / units_per_block, slice si, octet o.
  long long u_issue = 0;
  uint4 w[8];
  auto issue = [&]() {
    if (u_issue < units) {
      const long long j = u_issue / units_per_block, r = u_issue % units_per_block;
      const long long si = r / KD_OCTETS, o = r % KD_OCTETS;
      const long long rb = blockIdx.x + j * gridDim.x;
      const long long kl = (warp + si * KD_WARPS) * 256 + 8 * lane;
      const unsigned dst = tiles_s + static_cast<unsigned>(u_issue % KD_STAGES) * KD_TILE + lane * 16;
#if KD_BULK
      if (lane == 0) kd_mbar_expect_tx(bars + u_issue % KD_STAGES, 8 * 512);
      __syncwarp();
#endif
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
#if KD_ABL == 3
        long long row = rb * rows_per_block + 8 * o + (warp >> 1);
        const long long kl = ((warp & 1) * 8 + jj) * 256 + 8 * lane;
#else
        long long row = rb * rows_per_block + 8 * o + jj;
#endif
        row = row < m ? row : m - 1;
        const bool ok = kl < k && KD_ABL != 2;
#if KD_LDG
        w[jj] = ok ? kd_load_stream(A + row * args.lda + kl) : zero;
        (void)dst;
#elif KD_BULK
        (void)dst; (void)ok;
        if (lane == jj) {
          const long long kb = (warp + si * KD_WARPS) * 256;  // the k tail is the lab's to avoid: k % 256 == 0
          kd_bulk_copy(tiles + (u_issue % KD_STAGES) * KD_TILE + jj * KD_TILE_ROW, A + row * args.lda + kb, 512,
                       bars + u_issue % KD_STAGES);
        }
#else
        kd_cp16(dst + jj * KD_TILE_ROW, ok ? static_cast<const void*>(A + row * args.lda + kl) : args.a, ok);
#endif
      }
    }
#if !KD_LDG && !KD_BULK
    asm volatile("cp.async.commit_group;");
#endif
    ++u_issue;
  };
#pragma unroll
  for (int p = 0; p < (KD_LDG ? 1 : KD_STAGES - 1); ++p) issue();

  uint4 xa[8], xb[8];
  long long cur_slice = -1;
  long long u = 0;
  for (long long j = 0; j < my_blocks; ++j) {
    const long long rb = blockIdx.x + j * gridDim.x;
    const int slot = static_cast<int>(j % KD_RING);
    float* acc_b = ring + slot * KD_OCTETS * 128;
    // The slot is free once the block KD_RING before this one is finished.
    if (lane == 0)
      while (*reinterpret_cast<volatile int*>(gen + slot) != static_cast<int>(j / KD_RING)) __nanosleep(32);
    __syncwarp();
#pragma unroll 1
    for (int si = 0; si < my_slices; ++si) {
      const long long s = warp + static_cast<long long>(si) * KD_WARPS;
      if (s != cur_slice) {  // the tokens' fragments for this slice: tokens g and g + 8 at chunks 4q + t
        cur_slice = s;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const long long kk = s * 256 + 8 * (4 * q + t);
          xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
          xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk))
                                        : zero;
        }
      }
#pragma unroll 1
      for (int o = 0; o < KD_OCTETS; ++o, ++u) {
#if KD_LDG
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) *reinterpret_cast<uint4*>(tiles + jj * KD_TILE_ROW + lane * 16) = w[jj];
        __syncwarp();
        issue();  // unit u + 1 into registers, in flight during this unit's mmas
        const unsigned char* tile = tiles;
#elif KD_BULK
        issue();
        kd_mbar_wait(bars + u % KD_STAGES, static_cast<unsigned>((u / KD_STAGES) & 1));
        const unsigned char* tile = tiles + (u % KD_STAGES) * KD_TILE;
#else
        issue();  // into the tile the previous unit was read from (the __syncwarp below released it)
        asm volatile("cp.async.wait_group %0;" ::"n"(KD_STAGES - 1));
        __syncwarp();  // every lane's copies of unit u are visible to the warp
        const unsigned char* tile = tiles + (u % KD_STAGES) * KD_TILE;
#endif
        float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int q = 0; q < 8 * (KD_ABL != 1); ++q) {
          const uint4 b = *reinterpret_cast<const uint4*>(tile + g * KD_TILE_ROW + (4 * q + t) * 16);
          kd_mma(acc[q & 1], xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
          kd_mma(acc[q & 1], xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) atomicAdd(acc_b + o * 128 + i * 32 + lane, acc[0][i] + acc[1][i]);
        __syncwarp();  // the tile is read; the next issue may overwrite it
      }
    }
    // Arrive; the last warp to arrive finishes row block rb.
    __threadfence_block();
    int old = 0;
    if (lane == 0) old = atomicAdd(cnt + slot, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old == KD_WARPS - 1) {
      __threadfence_block();
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
        cnt[slot] = 0;
        __threadfence_block();
        *reinterpret_cast<volatile int*>(gen + slot) = static_cast<int>(j / KD_RING) + 1;
      }
      __syncwarp();
    }
  }
#if !KD_LDG && !KD_BULK
  asm volatile("cp.async.wait_all;");
#endif
}
