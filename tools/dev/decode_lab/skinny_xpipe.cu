// LAB KERNEL, not a family: it lost to cuBLAS (session 29, H100, lab_xpipe.json: 0.91-0.97x at
// 6144-28672 x 16, 73-86% of a streaming read; lab_xpipe_abl.json for the KD_ABL ablations;
// docs/kernel-notes.md): C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32
// accumulate (beta and bias as the families). skinny_xreg (session 28's lab) reached only 79-84% of
// a streaming read at n = 16: every CTA reloaded all of the tokens (128 KB at k = 4096) for 32-64
// rows of A (256-512 KB), so the tokens cost a quarter to a half of the weights' traffic, and its
// 1-2 waves of big CTAs left SMs idle at the end. This one keeps simt_gemv's load pattern (each warp
// copies 512 contiguous bytes of one row per instruction) and xreg's tensor-core math, and changes
// the shape of the work:
//  - persistent CTAs (grid = SMs x CTAs per SM) walk row blocks of 8 * KD_OCTETS rows round robin;
//  - warp w owns k slices of 256 (w, w + KD_WARPS, ...), so when k <= 256 * KD_WARPS each warp loads
//    its tokens' fragments into registers once for the whole kernel;
//  - A goes global -> shared memory by cp.async (no registers), KD_STAGES units of 8 rows x 512 bytes
//    in flight per warp, one continuous stream across octets, slices and row blocks;
//  - per row block the warps' partial sums meet in shared memory after one __syncthreads
//    (double-buffered, so the next block's sums never wait for this block's epilogue).
// Plan: grid = [min(row blocks, SMs * CTAs per SM), 1, batch], block = [32 * KD_WARPS],
//   smem = KD_WARPS * KD_STAGES * 8 * 528 + 2 * KD_WARPS * KD_OCTETS * 512.
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

#ifndef KD_ABL
#define KD_ABL 0  // lab ablations: 1 no mma, 2 no loads of A, 3 each warp reads 4 KB of one row per unit
#endif
#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"

#define KD_TILE_ROW 528  // 512 bytes of a row's slice + 16: lanes reading 8 rows hit distinct banks
#define KD_TILE (8 * KD_TILE_ROW)

__device__ __forceinline__ void kd_cp16(unsigned dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
}

extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, 1)
kd_skinny_xpipe(kd_gemm_args args) {
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
  float* red = reinterpret_cast<float*>(smem + KD_WARPS * KD_STAGES * KD_TILE);
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
  auto issue = [&]() {
    if (u_issue < units) {
      const long long j = u_issue / units_per_block, r = u_issue % units_per_block;
      const long long si = r / KD_OCTETS, o = r % KD_OCTETS;
      const long long rb = blockIdx.x + j * gridDim.x;
      const long long kl = (warp + si * KD_WARPS) * 256 + 8 * lane;
      const unsigned dst = tiles_s + static_cast<unsigned>(u_issue % KD_STAGES) * KD_TILE + lane * 16;
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
        kd_cp16(dst + jj * KD_TILE_ROW, ok ? static_cast<const void*>(A + row * args.lda + kl) : args.a, ok);
      }
    }
    asm volatile("cp.async.commit_group;");
    ++u_issue;
  };
#pragma unroll
  for (int p = 0; p < KD_STAGES - 1; ++p) issue();

  uint4 xa[8], xb[8];
  long long cur_slice = -1;
  long long u = 0;
  for (long long j = 0; j < my_blocks; ++j) {
    const long long rb = blockIdx.x + j * gridDim.x;
    float* red_w = red + ((j & 1) * KD_WARPS + warp) * KD_OCTETS * 128;
    if (my_slices == 0) {
#pragma unroll
      for (int o = 0; o < KD_OCTETS; ++o)
#pragma unroll
        for (int i = 0; i < 4; ++i) red_w[o * 128 + i * 32 + lane] = 0.f;
    }
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
        issue();  // into the tile the previous unit was read from (the __syncwarp below released it)
        asm volatile("cp.async.wait_group %0;" ::"n"(KD_STAGES - 1));
        __syncwarp();  // every lane's copies of unit u are visible to the warp
        const unsigned char* tile = tiles + (u % KD_STAGES) * KD_TILE;
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int q = 0; q < 8 * (KD_ABL != 1); ++q) {
          const uint4 b = *reinterpret_cast<const uint4*>(tile + g * KD_TILE_ROW + (4 * q + t) * 16);
          kd_mma(acc, xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
          kd_mma(acc, xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float* p = red_w + o * 128 + i * 32 + lane;
          *p = si == 0 ? acc[i] : *p + acc[i];
        }
        __syncwarp();  // the tile is read; the next issue may overwrite it
      }
    }
    // The warps' partial sums for row block rb meet.
    __syncthreads();
    const float* red_b = red + (j & 1) * KD_WARPS * KD_OCTETS * 128;
    for (int idx = threadIdx.x; idx < KD_OCTETS * 128; idx += blockDim.x) {
      const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
      float sum = 0.f;
#pragma unroll
      for (int w = 0; w < KD_WARPS; ++w) sum += red_b[w * KD_OCTETS * 128 + idx];
      // c0, c1: token (l >> 2), rows 2(l & 3) and +1 of the octet; c2, c3: token + 8.
      kd_epilogue(args, C, rb * rows_per_block + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), sum);
    }
  }
  asm volatile("cp.async.wait_all;");
}
