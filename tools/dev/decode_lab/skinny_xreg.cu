// LAB KERNEL, not a family: it lost to cuBLAS (session 29, H100, lab_xreg.json: 0.92-0.97x at
// 6144-28672 x 16, 79-84% of a streaming read; 1.19x at 1024 x 16; docs/kernel-notes.md, session 29).
// C = alpha * A^T B for ta=T tb=N, f16/bf16, n <= 16, f32 accumulate (beta and bias as the families).
// It combines what session 28 measured: simt_gemv's load pattern, which streamed A at 93-100% of a
// plain read (each warp instruction reads 512 contiguous bytes of one row), with tensor-core math,
// which n = 16 needs (16 fmaf per element of A would make the CUDA cores the limit):
//  - warp w of a CTA owns k slices of 256 elements (w, w + KD_WARPS, ...); for its slice it keeps the
//    tokens' mma fragments in registers (16 x 256 elements: 16 uint4 per lane), loaded once;
//  - per group of 8 rows ("octet") of the CTA's KD_OCTETS, each lane loads 16 bytes of each row at
//    k = slice + 8 * lane (8 loads of 512 contiguous bytes per warp), writes them to a warp-private
//    shared-memory tile and reads back the m16n8k16 B fragments (8 rows as the mma's N, the tokens
//    as its M): lane (g, t) takes row g at chunks 4q + t, q = 0..7, the k permutation skinny_mma uses;
//  - the warps' partial sums meet once, at the end, in shared memory;
//  - KD_PIPE (default 1) issues the next octet's loads as soon as this octet's rows are in the tile.
// Plan: grid = [ceil(m / (8 * KD_OCTETS)), 1, batch], block = [32 * KD_WARPS],
//   smem = KD_WARPS * 8 * 528 (the tiles) + KD_WARPS * KD_OCTETS * 512 (the running sums).
// Two switches for chains of decode GEMMs that are programmatic dependents of one another (issue 27,
// session 50, H200, pdl_chain_lab.py: the prefetch cost 1.5-2.1 us a layer of q, k and v, the trigger
// nothing measurable; both 0 by default, which is the kernel sessions 29 and 41 measured):
//  - KD_TRIG = 1: griddepcontrol.launch_dependents first, so the next call's CTAs may start on SMs
//    this grid leaves free, or frees as its CTAs finish;
//  - KD_PF = 1: before the grid dependency wait, each thread asks the L2 for its piece of the CTA's
//    rows of A (cp.async.bulk.prefetch.L2, one predicated instruction): the weights of the
//    next call stream from HBM during the previous call's tail instead of after it. A prefetch moves
//    no value into the kernel: the L2 is where every write to device memory lands, so a load after
//    the wait sees the previous kernel's writes whether or not its line was prefetched.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_WARPS 16
#define KD_OCTETS 4
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_PF
#define KD_PF 0
#endif
#ifndef KD_TRIG
#define KD_TRIG 0
#endif
#ifndef KD_PIPE
#define KD_PIPE 1  // the next octet's loads issued before this octet's mmas
#endif

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"
#include "../../../search/src/builtin/kernels/load_stream.cuh"

#define KD_TILE_ROW 528  // 512 bytes of a row's slice + 16: lanes reading 8 rows hit distinct banks


extern "C" __global__ void __launch_bounds__(32 * KD_WARPS, 1)
kd_skinny_xreg(kd_gemm_args args) {
#if KD_PF
  {
    const long long r0 = static_cast<long long>(blockIdx.x) * 8 * KD_OCTETS;
    const long long rows = args.m - r0 < 8 * KD_OCTETS ? args.m - r0 : 8 * KD_OCTETS;
    const unsigned long long bytes = static_cast<unsigned long long>(rows) * args.lda * sizeof(KD_IN_T);
    const unsigned long long piece = (bytes / blockDim.x + 127) / 128 * 128;
    const unsigned long long off = threadIdx.x * piece;
    const unsigned sz = off < bytes ? static_cast<unsigned>(bytes - off < piece ? bytes - off : piece) : 0u;
    const char* p = static_cast<const char*>(args.a) +
                    (static_cast<unsigned long long>(blockIdx.z) * args.stride_a + r0 * args.lda) * sizeof(KD_IN_T) + off;
    asm volatile("{.reg .pred p; setp.ne.u32 p, %1, 0; @p cp.async.bulk.prefetch.L2.global [%0], %1;}" ::"l"(p),
                 "r"(sz)
                 : "memory");
  }
#endif
#if KD_TRIG
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // the launch may overlap the previous kernel (after KD_PF's prefetch)
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  unsigned char* tile = smem + warp * 8 * KD_TILE_ROW;
  const long long row0 = static_cast<long long>(blockIdx.x) * 8 * KD_OCTETS;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // Each warp's running sums per octet, red[warp][o][i][lane], after the tiles: an octet's four
  // accumulators are added here once per slice (a register array indexed by octet would live in
  // local memory, and unrolling the octets hoists every octet's loads).
  float* red = reinterpret_cast<float*>(smem + KD_WARPS * 8 * KD_TILE_ROW);
#pragma unroll
  for (int o = 0; o < KD_OCTETS; ++o)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[((warp * KD_OCTETS + o) * 4 + i) * 32 + lane] = 0.f;

  for (long long s0 = warp * 256LL; s0 < k; s0 += 256LL * KD_WARPS) {
    // The tokens' fragments for this slice: tokens g and g + 8 at chunks 4q + t.
    uint4 xa[8], xb[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const long long kk = s0 + 8 * (4 * q + t);
      xa[q] = (kk < k && g < n) ? __ldg(reinterpret_cast<const uint4*>(B + g * args.ldb + kk)) : zero;
      xb[q] = (kk < k && g + 8 < n) ? __ldg(reinterpret_cast<const uint4*>(B + (g + 8) * args.ldb + kk)) : zero;
    }
    const long long kl = s0 + 8 * lane;  // this lane's chunk of every row
    uint4 w[8];
    auto load_octet = [&](int o) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        long long r = row0 + 8 * o + j;
        r = r < m ? r : m - 1;
        w[j] = kl < k ? kd_load_stream(A + r * args.lda + kl) : zero;
      }
    };
    load_octet(0);
#pragma unroll 1
    for (int o = 0; o < KD_OCTETS; ++o) {
      __syncwarp();  // the previous octet's fragment reads are done
#pragma unroll
      for (int j = 0; j < 8; ++j) *reinterpret_cast<uint4*>(tile + j * KD_TILE_ROW + lane * 16) = w[j];
      __syncwarp();
      // KD_PIPE: w is in the tile now, so the next octet's loads can fly during this one's mmas.
      if (KD_PIPE && o + 1 < KD_OCTETS) load_octet(o + 1);
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const uint4 b = *reinterpret_cast<const uint4*>(tile + g * KD_TILE_ROW + (4 * q + t) * 16);
        kd_mma(acc, xa[q].x, xb[q].x, xa[q].y, xb[q].y, b.x, b.y, static_cast<KD_IN_T*>(nullptr));
        kd_mma(acc, xa[q].z, xb[q].z, xa[q].w, xb[q].w, b.z, b.w, static_cast<KD_IN_T*>(nullptr));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) red[((warp * KD_OCTETS + o) * 4 + i) * 32 + lane] += acc[i];
      if (!KD_PIPE && o + 1 < KD_OCTETS) load_octet(o + 1);
    }
  }

  // The warps' partial sums meet.
  __syncthreads();
  for (int idx = threadIdx.x; idx < KD_OCTETS * 4 * 32; idx += blockDim.x) {
    const int o = idx / 128, i = (idx / 32) % 4, l = idx % 32;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < KD_WARPS; ++w) sum += red[((w * KD_OCTETS + o) * 4 + i) * 32 + l];
    // c0, c1: token (l >> 2), rows 2(l & 3) and +1 of the octet; c2, c3: token + 8.
    kd_epilogue(args, C, row0 + 8 * o + 2 * (l & 3) + (i & 1), (l >> 2) + (i >= 2 ? 8 : 0), sum);
  }
}
