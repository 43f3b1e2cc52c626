// LAB KERNEL, not a family (issue 27, session 50, H200, lab_xbsk.json: 0.62-0.91x cuBLAS, every split and
// non-persistent variant slower than skinny_bulk's persistent seeds; docs/kernel-notes.md): skinny_bulk
// with k split over gridDim.y CTAs and the partial sums met inside the launch (skinny_xsk.cu's ticket
// keyed by %gridid: the last CTA of a row block to arrive adds the splits' partials in split order and
// finishes C). Each CTA copies only its k range of the tokens (KD_BSMEM) and streams only its k range
// of A, so a 4096 x 16 x 4096 call can run as more CTAs than row blocks without each reading all 128 KB
// of tokens. Workspace (gridDim.y > 1): tiles * 8 + tiles * gridDim.y * kVals * 128 bytes, tiles = row
// blocks * batch. bf16/f16 only.
// Based on:
// Family skinny_bulk: C = alpha * A^T B (+ beta C) (+ bias) for ta=T tb=N, f16/bf16/f32 inputs,
// f32 accumulate, n <= 8*KD_NT. f32 inputs run on TF32 tensor cores with error compensation
// (3xTF32: x = hi + lo with both TF32, products hi*hi + hi*lo + lo*hi), which keeps strict-fp32
// accuracy classes; the gate checks that against cuBLAS's own error. The decode-GEMM family for when bytes in flight are what limits:
//  - persistent CTAs walk (row block, k chunk) stages; a producer warp streams each stage's A rows
//    into a KD_STAGES-deep shared-memory ring with 1-D bulk async copies (cp.async.bulk, completing
//    on an mbarrier), so ~KD_STAGES*KD_ROWS*KD_KC*2 bytes per SM are in flight without registers;
//  - KD_WARPS consumer warps split each stage's k range and feed mma.sync m16n8k16 straight from
//    shared memory with 16-byte loads, using the same k permutation for A (smem) and B (global/L2)
//    as skinny_mma; rows are padded by 64 bytes so a quarter-warp's loads hit distinct banks;
//  - at the end of a row block the consumers reduce through shared memory and write C.
// Requires k, lda and ldb multiples of 16/sizeof(element) and 16-byte aligned A and B.
//
// Named parameters:
//   KD_IN_T, KD_OUT_T as skinny_mma   KD_ROWS rows per block (16, 32, 64)   KD_NT n8 tiles (1..4)
//   KD_KC k elements per stage (multiple of 32)   KD_STAGES ring depth (2..6)
//   KD_WARPS consumer warps (1..16)   KD_BETA_ZERO 0|1   KD_BIAS 0|1
//   KD_BSMEM 0|1: B's n columns copied once per CTA into shared memory (rows of k elements + 64
//     bytes) and read from there, instead of every row block reading them again from L2: at
//     n = 16 those rereads are half as many bytes as A itself. n * k elements below 2^20 bytes.
// Plan: grid = [min(row blocks, SMs * ctas per SM), 1, batch], block = [32 * (KD_WARPS + 1)],
//   smem = KD_STAGES * KD_ROWS * (KD_KC * 2 + 64) + reduction scratch (+ n * (k * 2 + 64) with
//   KD_BSMEM); see bulk_plan in families.cpp.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_IN_T
#define KD_IN_T __nv_bfloat16
#define KD_OUT_T __nv_bfloat16
#define KD_ROWS 16
#define KD_NT 1
#define KD_KC 2048
#define KD_STAGES 3
#define KD_WARPS 8
#define KD_BETA_ZERO 1
#define KD_BIAS 0
#endif
#ifndef KD_BSMEM
#define KD_BSMEM 0
#endif

#define KD_MT (KD_ROWS / 16)
#define KD_ELEM ((int)sizeof(KD_IN_T))
#define KD_KVEC (16 / KD_ELEM)   // elements per 16-byte lane load
#define KD_KBLOCK (4 * KD_KVEC)  // k covered by one lane quad's loads
#define KD_ROW_BYTES (KD_KC * KD_ELEM + 64)
#define KD_STAGE_BYTES (KD_ROWS * KD_ROW_BYTES)

#include "../../../search/src/builtin/kernels/c_epilogue.cuh"
#include "../../../search/src/builtin/kernels/mma_m16n8k16.cuh"

__device__ __forceinline__ void kd_mma_tf32(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                            unsigned a3, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// Round to TF32, to nearest with ties away from zero (cvt.rna's result for finite values) in two
// integer ops, which the compiler also shares between the m and n tiles that use one value.
__device__ __forceinline__ unsigned kd_tf32(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}
struct kd_split { unsigned hi, lo; };
__device__ __forceinline__ kd_split kd_split3(unsigned bits) {
  const float x = __uint_as_float(bits);
  const unsigned hi = kd_tf32(x);
  return {hi, kd_tf32(x - __uint_as_float(hi))};
}

// One 16-byte chunk per lane of rows r0 (a0) and r0+8 (a1) against B (b): two k16 mmas for
// 16-bit types, two k8 x 3 (3xTF32) for f32. Both use the quad's shared k permutation.
__device__ __forceinline__ void kd_mma_chunk(float (&d)[4], uint4 a0, uint4 a1, uint4 b, __nv_bfloat16*) {
  kd_mma(d, a0.x, a1.x, a0.y, a1.y, b.x, b.y, static_cast<__nv_bfloat16*>(nullptr));
  kd_mma(d, a0.z, a1.z, a0.w, a1.w, b.z, b.w, static_cast<__nv_bfloat16*>(nullptr));
}
__device__ __forceinline__ void kd_mma_chunk(float (&d)[4], uint4 a0, uint4 a1, uint4 b, __half*) {
  kd_mma(d, a0.x, a1.x, a0.y, a1.y, b.x, b.y, static_cast<__half*>(nullptr));
  kd_mma(d, a0.z, a1.z, a0.w, a1.w, b.z, b.w, static_cast<__half*>(nullptr));
}
__device__ __forceinline__ void kd_mma_3xtf32(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                              unsigned a3, unsigned b0, unsigned b1) {
  const kd_split x0 = kd_split3(a0), x1 = kd_split3(a1), x2 = kd_split3(a2), x3 = kd_split3(a3);
  const kd_split y0 = kd_split3(b0), y1 = kd_split3(b1);
  kd_mma_tf32(d, x0.lo, x1.lo, x2.lo, x3.lo, y0.hi, y1.hi);
  kd_mma_tf32(d, x0.hi, x1.hi, x2.hi, x3.hi, y0.lo, y1.lo);
  kd_mma_tf32(d, x0.hi, x1.hi, x2.hi, x3.hi, y0.hi, y1.hi);
}
// The tensor cores' internal accumulation truncates; chained over thousands of k steps into one
// accumulator that costs ~50x cuBLAS's strict-fp32 error. Each chunk therefore accumulates into a
// zeroed temporary that is added to the running sum with an IEEE (round-to-nearest) FADD.
__device__ __forceinline__ void kd_mma_chunk(float (&d)[4], uint4 a0, uint4 a1, uint4 b, float*) {
  float t[4] = {0.f, 0.f, 0.f, 0.f};
  kd_mma_3xtf32(t, a0.x, a1.x, a0.y, a1.y, b.x, b.y);
  kd_mma_3xtf32(t, a0.z, a1.z, a0.w, a1.w, b.z, b.w);
#pragma unroll
  for (int i = 0; i < 4; ++i) d[i] += t[i];
}

#include "../../../search/src/builtin/kernels/bulk_copy.cuh"

extern "C" __global__ void __launch_bounds__(32 * (KD_WARPS + 1), 1)
kd_skinny_xbsk(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ unsigned long long full_bar[KD_STAGES], empty_bar[KD_STAGES];
  constexpr int kVals = KD_MT * KD_NT * 4;
  float* scratch = reinterpret_cast<float*>(smem + KD_STAGES * KD_STAGE_BYTES);  // [KD_WARPS][kVals][32]
#if KD_BSMEM
  __shared__ unsigned long long b_bar;
  // B's columns after the scratch, each k elements and 64 bytes of padding (a quarter-warp's eight
  // 16-byte loads from eight columns then hit distinct banks, as A's padded rows do).
  unsigned char* b_smem = reinterpret_cast<unsigned char*>(scratch + KD_WARPS * kVals * 32);
  const long long b_row_bytes = ((args.k + KD_KC - 1) / KD_KC + gridDim.y - 1) / gridDim.y * KD_KC * KD_ELEM + 64;
#endif

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z;
  const KD_IN_T* A = static_cast<const KD_IN_T*>(args.a) + z * args.stride_a;
  const KD_IN_T* B = static_cast<const KD_IN_T*>(args.b) + z * args.stride_b;
  KD_OUT_T* C = static_cast<KD_OUT_T*>(args.c) + z * args.stride_c;
  const long long row_blocks = (m + KD_ROWS - 1) / KD_ROWS;
  const long long chunks = (k + KD_KC - 1) / KD_KC;
  const long long cps = (chunks + gridDim.y - 1) / gridDim.y;  // k chunks per split
  const long long c_begin = blockIdx.y * cps, c_end = chunks < c_begin + cps ? chunks : c_begin + cps;
  const long long ks0 = c_begin * KD_KC, ks1 = k < c_end * KD_KC ? k : c_end * KD_KC;
  __shared__ int last_flag;

  if (threadIdx.x == 0) {
    for (int s = 0; s < KD_STAGES; ++s) {
      kd_mbar_init(&full_bar[s], 1);
      kd_mbar_init(&empty_bar[s], KD_WARPS);
    }
#if KD_BSMEM
    kd_mbar_init(&b_bar, 1);
#endif
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == KD_WARPS) {
    // Producer: one lane streams every stage this CTA will consume, in consumption order.
    if (lane == 0) {
#if KD_BSMEM
      // All of B first. Copying it a k chunk at a time beside A's first stages, each chunk with
      // its barrier, was no faster at KD_KC = 1024 and 25-30% slower at 512 (session 27, H100).
      kd_mbar_expect_tx(&b_bar, static_cast<unsigned>(n * (ks1 - ks0) * KD_ELEM));
      for (long long c = 0; c < n; ++c)
        kd_bulk_copy(b_smem + c * b_row_bytes, B + c * args.ldb + ks0, static_cast<unsigned>((ks1 - ks0) * KD_ELEM),
                     &b_bar);
#endif
      long long seq = 0;
      for (long long rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
        const long long row0 = rb * KD_ROWS;
        const int rows = static_cast<int>(m - row0 < KD_ROWS ? m - row0 : KD_ROWS);
        for (long long c = c_begin; c < c_end; ++c, ++seq) {
          const int s = static_cast<int>(seq % KD_STAGES);
          if (seq >= KD_STAGES) kd_mbar_wait(&empty_bar[s], static_cast<unsigned>(((seq / KD_STAGES) - 1) & 1));
          const long long k0 = c * KD_KC;
          const unsigned bytes = static_cast<unsigned>((k - k0 < KD_KC ? k - k0 : KD_KC) * KD_ELEM);
          kd_mbar_expect_tx(&full_bar[s], bytes * rows);
          unsigned char* stage = smem + s * KD_STAGE_BYTES;
          for (int r = 0; r < rows; ++r)
            kd_bulk_copy(stage + r * KD_ROW_BYTES, A + (row0 + r) * args.lda + k0, bytes, &full_bar[s]);
        }
      }
    }
    return;
  }

  // Consumers.
  const int quad = lane & 3, group = lane >> 2;
#if KD_BSMEM
  kd_mbar_wait(&b_bar, 0);
#endif
  long long seq = 0;
  for (long long rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
    float acc[KD_MT][KD_NT][4];
#pragma unroll
    for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < KD_NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

    for (long long c = c_begin; c < c_end; ++c, ++seq) {
      const int s = static_cast<int>(seq % KD_STAGES);
      kd_mbar_wait(&full_bar[s], static_cast<unsigned>((seq / KD_STAGES) & 1));
      const unsigned char* stage = smem + s * KD_STAGE_BYTES;
      const long long k0 = c * KD_KC;
      const int kc = static_cast<int>(k - k0 < KD_KC ? k - k0 : KD_KC);
#pragma unroll 4
      for (int kb = warp * KD_KBLOCK; kb < kc; kb += KD_KBLOCK * KD_WARPS) {
        const int kk = kb + quad * KD_KVEC;
        const bool in_k = kk < kc;
        uint4 av[KD_MT][2];
#pragma unroll
        for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            av[mt][h] = in_k ? *reinterpret_cast<const uint4*>(
                                   stage + (mt * 16 + group + h * 8) * KD_ROW_BYTES + kk * KD_ELEM)
                             : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int nt = 0; nt < KD_NT; ++nt) {
          const long long col = nt * 8 + group;
#if KD_BSMEM
          const uint4 b = (in_k && col < n)
                              ? *reinterpret_cast<const uint4*>(b_smem + col * b_row_bytes + (k0 - ks0 + kk) * KD_ELEM)
                              : make_uint4(0, 0, 0, 0);
#else
          const uint4 b = (in_k && col < n) ? __ldg(reinterpret_cast<const uint4*>(B + col * args.ldb + k0 + kk))
                                            : make_uint4(0, 0, 0, 0);
#endif
#pragma unroll
          for (int mt = 0; mt < KD_MT; ++mt)
            kd_mma_chunk(acc[mt][nt], av[mt][0], av[mt][1], b, static_cast<KD_IN_T*>(nullptr));
        }
      }
      __syncwarp();
      if (lane == 0) kd_mbar_arrive(&empty_bar[s]);
    }

    // Reduce across consumer warps (named barrier 1: the producer warp does not take part).
#pragma unroll
    for (int mt = 0; mt < KD_MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < KD_NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) scratch[(warp * kVals + (mt * KD_NT + nt) * 4 + i) * 32 + lane] = acc[mt][nt][i];
    asm volatile("bar.sync 1, %0;" ::"r"(32 * KD_WARPS) : "memory");
    const long long row0 = rb * KD_ROWS;
    auto finish = [&](int idx, float sum) {
      const int v = idx / 32, l = idx % 32;
      const int mt = v / (KD_NT * 4), nt = (v / 4) % KD_NT, i = v % 4;
      kd_epilogue(args, C, row0 + mt * 16 + (l >> 2) + (i >= 2 ? 8 : 0), nt * 8 + 2 * (l & 3) + (i & 1), sum);
    };
    constexpr int kOut = kVals * 32;
    const long long tile = z * row_blocks + rb;
    unsigned long long* ticket = static_cast<unsigned long long*>(args.workspace) + tile;
    float* part = reinterpret_cast<float*>(static_cast<unsigned long long*>(args.workspace) + row_blocks * gridDim.z) +
                  tile * gridDim.y * kOut;
    for (int idx = threadIdx.x; idx < kOut; idx += 32 * KD_WARPS) {
      const int v = idx / 32, l = idx % 32;
      float sum = 0.f;
#pragma unroll
      for (int w = 0; w < KD_WARPS; ++w) sum += scratch[(w * kVals + v) * 32 + l];
      if (gridDim.y == 1) finish(idx, sum);
      else __stcg(part + blockIdx.y * kOut + idx, sum);
    }
    if (gridDim.y > 1) {
      __threadfence();
      asm volatile("bar.sync 1, %0;" ::"r"(32 * KD_WARPS) : "memory");
      if (threadIdx.x == 0) {
        unsigned long long gid;
        asm volatile("mov.u64 %0, %%gridid;" : "=l"(gid));
        const unsigned long long epoch = (gid & 0x7fffffffffffull) | 0x800000000000ull;  // 48 bits, never 0
        unsigned long long cur = *reinterpret_cast<volatile unsigned long long*>(ticket), want;
        for (;;) {
          want = (cur >> 16) == epoch ? cur + 1 : (epoch << 16) | 1;
          const unsigned long long prev = atomicCAS(ticket, cur, want);
          if (prev == cur) break;
          cur = prev;
        }
        last_flag = (want & 0xffff) == gridDim.y;
        if (last_flag) *reinterpret_cast<volatile unsigned long long*>(ticket) = 0;
      }
      asm volatile("bar.sync 1, %0;" ::"r"(32 * KD_WARPS) : "memory");
      if (last_flag) {
        __threadfence();
        for (int idx = threadIdx.x; idx < kOut; idx += 32 * KD_WARPS) {
          float v = 0.f;
          for (unsigned sp = 0; sp < gridDim.y; ++sp) v += __ldcg(part + sp * kOut + idx);
          finish(idx, v);
        }
      }
    }
    asm volatile("bar.sync 1, %0;" ::"r"(32 * KD_WARPS) : "memory");
  }
}
