// Family tc_tiled: the general tensor-core GEMM, C = alpha * op(A) op(B) (+ beta C) (+ bias[row]),
// op(A) from ta = T (nn.Linear: k contiguous) or ta = N (torch.mm: m contiguous), tb = N (k
// contiguous), A and B of one type (f16, bf16 or f32), C of any type, f32 accumulation, strided
// batch.
//  - CTA tile KD_BM x KD_BN, k tile KD_BK; warps own KD_WM x KD_WN sub-tiles (m16 x n8 mma tiles);
//  - KD_STAGES-deep cp.async.cg (16-byte) ring in shared memory, zero-filled at the m/n/k edges
//    (src-size < 16), one commit group per k tile, empty groups past the end keep the count exact;
//  - 16-bit types: mma.sync m16n8k16 fed by ldmatrix (.trans for an m-contiguous A) from rows
//    padded by 16 bytes (conflict-free 8-row phases);
//  - f32: KD_3XTF32 = 1 is error-compensated TF32 (x = hi + lo, both rounded to nearest; products
//    lo*hi + hi*lo + hi*hi in m16n8k8) for strict-fp32 calls. The tensor cores' accumulation
//    truncates, so the mmas of KD_PROMOTE k8 steps (1, 2 or 4) chain into a fresh temporary that is
//    added to the running sum with an IEEE FADD; KD_3XTF32 = 0 is plain TF32 (precision=tf32 calls
//    only). With ta = T both operands are k-contiguous and lane t's k slots (t, t+4) of the two k8
//    steps of a k16 block are the physical k 4t .. 4t+3 (the same permutation for A and B, so the
//    sum is unchanged): one 16-byte shared load per row per k16, rows padded to 16 mod 32 words;
//  - KD_SPLITK > 1 splits the k tiles over blockIdx.z (z = batch * KD_SPLITK + split): each split
//    writes its f32 partial tile to the workspace [split][batch][n][m] and a second launch,
//    kd_tc_tiled_reduce, sums the splits in a fixed order (deterministic) and runs the epilogue.
// Requirements (the host rules check them): lda, ldb (and batch strides) multiples of 16 bytes'
// worth of elements, A and B 16-byte aligned. m, n and k are free (tails are zero-filled).
//
// Named parameters:
//   KD_A_T, KD_B_T, KD_C_T element types   KD_TA 0 = N, 1 = T   KD_TB 0 (N only)
//   KD_BM, KD_BN, KD_BK CTA tile   KD_WM, KD_WN warp tile (multiples of 16 and 8; 16 for 16-bit)
//   KD_STAGES ring depth (2..6)   KD_SPLITK k splits (1..16)   KD_MIN_CTAS launch-bounds minimum
//   KD_3XTF32 0|1 (f32 only)   KD_PROMOTE 1|2|4 (f32: k8 steps per FADD; divides BK / 8)
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1
// Plan: launch 0 kd_tc_tiled: grid = [ceil(m/BM), ceil(n/BN), batch * SPLITK],
//   block = [32 * (BM/WM) * (BN/WN)], smem = STAGES * (A tile + B tile) bytes (see tc_smem below);
//   when SPLITK > 1, workspace = SPLITK * batch * m * n * 4 bytes and launch 1 kd_tc_tiled_reduce:
//   grid = [any], block = [256] (grid-stride).
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "mma_defaults.cuh"
#ifndef KD_BM
#define KD_BM 128
#endif
#ifndef KD_BN
#define KD_BN 128
#endif
#ifndef KD_BK
#define KD_BK 32
#endif
#ifndef KD_WM
#define KD_WM 64
#endif
#ifndef KD_WN
#define KD_WN 32
#endif
#ifndef KD_STAGES
#define KD_STAGES 3
#endif
#ifndef KD_MIN_CTAS
#define KD_MIN_CTAS 1
#endif

#if KD_TB != 0
#error "tc_tiled: only tb = N"
#endif

#define KD_WARPS ((KD_BM / KD_WM) * (KD_BN / KD_WN))
#define KD_THREADS (32 * KD_WARPS)

typedef KD_A_T kd_t;
constexpr int kElem = (int)sizeof(kd_t);
constexpr bool kF32 = kElem == 4;
constexpr int kVec = 16 / kElem;          // elements per 16-byte cp.async
// f32 with ta = T loads 16 bytes per lane from rows of both tiles: a row stride of 16 mod 32 words
// keeps each 8-lane phase (two rows x four lanes) on distinct banks. Otherwise k-contiguous rows get
// +16 bytes (conflict-free 8-row ldmatrix phases, scalar f32 loads).
constexpr bool kF32Vec = kF32 && KD_TA;
constexpr int kPadK = kF32Vec ? (48 - KD_BK % 32) % 32 : 16 / kElem;
constexpr int kPadM = 8;                  // m-contiguous rows: +8 elements (16 B for 16-bit, 32 B for f32)
constexpr int kKStep = kF32 ? 8 : 16;     // k per mma
constexpr int kMT = KD_WM / 16, kNT = KD_WN / 8;
// A tile: [BM][BK + kPadK] when k-contiguous (ta = T), [BK][BM + kPadM] when m-contiguous (ta = N).
constexpr int kALd = KD_TA ? KD_BK + kPadK : KD_BM + kPadM;
constexpr int kATile = KD_TA ? KD_BM * kALd : KD_BK * kALd;
constexpr int kBLd = KD_BK + kPadK;  // B tile: [BN][BK + kPadK]
constexpr int kBTile = KD_BN * kBLd;
constexpr int kStageElems = kATile + kBTile;

static_assert(KD_BM % KD_WM == 0 && KD_BN % KD_WN == 0, "warp tiles must divide the CTA tile");
static_assert(KD_WM % 16 == 0 && KD_WN % (kF32 ? 8 : 16) == 0, "warp tile granularity");
static_assert(KD_BK % kKStep == 0 && KD_BK % kVec == 0 && KD_BM % kVec == 0, "k tile granularity");
static_assert(sizeof(KD_B_T) == sizeof(KD_A_T), "A and B share one type");
static_assert(!kF32Vec || KD_BK % 16 == 0, "f32 with ta = T works in k16 blocks");

#include "c_epilogue.cuh"
#include "mma_m16n8k16.cuh"

__device__ __forceinline__ unsigned kd_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16-byte async copy; bytes < 16 zero-fills the rest (0: all zeros, src not read).
__device__ __forceinline__ void kd_cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(kd_smem_addr(dst)), "l"(src),
               "r"(bytes) : "memory");
}
__device__ __forceinline__ void kd_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kd_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void kd_ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kd_smem_addr(p)));
}
__device__ __forceinline__ void kd_ldsm_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kd_smem_addr(p)));
}

// d = a*b + c (m16n8k8 TF32).
__device__ __forceinline__ void kd_mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                            unsigned b1, const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
// Round to TF32 (10 stored mantissa bits), to nearest with ties away from zero: cvt.rna's result
// for finite values, in two integer ops; cvt.rna itself measured 10-13% slower for 3xTF32 tiles on
// an H200. An infinity stays infinite; a NaN may become an infinity here, but its lo part
// (x - hi) is NaN, so NaN still propagates to the result.
__device__ __forceinline__ unsigned kd_tf32(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}
// x as TF32 hi + lo for 3xTF32; plain TF32 (precision=tf32 keys) uses hi alone and lo is dead code.
struct kd_hilo { unsigned hi, lo; };
__device__ __forceinline__ kd_hilo kd_round(float x) {
  const unsigned hi = kd_tf32(x);
#if KD_3XTF32
  return {hi, kd_tf32(x - __uint_as_float(hi))};
#else
  return {hi, 0u};
#endif
}

// Copies one tile of OUTER rows x CONTIG contiguous elements (row r at X + (outer0 + r) * ld +
// contig0) into smem rows of `sld` elements, 16 bytes per cp.async; rows past `outer_n` and
// elements past `contig_n` are zero-filled.
template <int OUTER, int CONTIG>
__device__ __forceinline__ void kd_load_tile(kd_t* s, int sld, const kd_t* X, long long ld,
                                             long long outer_n, long long contig_n,
                                             long long outer0, long long contig0) {
  constexpr int kChunksPerRow = CONTIG / kVec;
  constexpr int kChunks = OUTER * kChunksPerRow;
#pragma unroll
  for (int i = 0; i < (kChunks + KD_THREADS - 1) / KD_THREADS; ++i) {
    const int c = threadIdx.x + i * KD_THREADS;
    if (kChunks % KD_THREADS != 0 && c >= kChunks) break;
    const int r = c / kChunksPerRow, e = (c % kChunksPerRow) * kVec;
    const long long go = outer0 + r, gc = contig0 + e;
    long long left = contig_n - gc;
    left = left < 0 ? 0 : (left > kVec ? kVec : left);
    const int bytes = go < outer_n ? static_cast<int>(left) * kElem : 0;
    const kd_t* src = bytes > 0 ? X + go * ld + gc : X;
    kd_cp_async16(s + r * sld + e, src, bytes);
  }
}

// The same tile when it lies wholly inside the matrix: no bounds checks. A thread's chunks sit
// kRowStep rows apart at one column, so one source offset (row * ld + column, computed once per CTA)
// and one row step serve them all; a k tile only moves the base pointer. Tiles whose rows do not
// split evenly over the threads keep the checked copy.
template <int OUTER, int CONTIG>
struct kd_tile_offsets {
  static constexpr int kChunksPerRow = CONTIG / kVec;
  static constexpr int kChunks = OUTER * kChunksPerRow;
  static constexpr bool kEven = KD_THREADS % kChunksPerRow == 0;
  static constexpr int kRowStep = KD_THREADS / kChunksPerRow;
  static constexpr int kPerThread = (kChunks + KD_THREADS - 1) / KD_THREADS;
  long long src0 = 0, step = 0;
  int dst0 = 0;
  __device__ __forceinline__ void init(long long ld, int sld) {
    const int r = threadIdx.x / kChunksPerRow, e = (threadIdx.x % kChunksPerRow) * kVec;
    src0 = r * ld + e;
    step = kRowStep * ld;
    dst0 = r * sld + e;
  }
  __device__ __forceinline__ void copy(kd_t* s, int sld, const kd_t* base) const {
    const kd_t* src = base + src0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      if (kChunks % KD_THREADS != 0 && threadIdx.x + i * KD_THREADS >= kChunks) break;
      kd_cp_async16(s + dst0 + i * kRowStep * sld, src, 16);
      src += step;
    }
  }
};

// f32: one k tile of the warp's sub-tile, KD_PROMOTE k8 steps at a time. Fragment registers of
// m16n8k8 tf32 for lane (g, t) and step j: a0 = A(g, k0), a1 = A(g+8, k0), a2 = A(g, k1),
// a3 = A(g+8, k1), b0 = B(k0, g), b1 = B(k1, g), where (k0, k1) = (t, t+4) of the step when A is
// m-contiguous, and (4t+2q, 4t+2q+1) of the step's k16 block (q = j % 2) when both operands are
// k-contiguous (see the header).
constexpr int kPromote = KD_PROMOTE;
static_assert(kPromote == 1 || kPromote == 2 || kPromote == 4, "KD_PROMOTE is 1, 2 or 4");
static_assert(!kF32 || KD_BK % (8 * kPromote) == 0, "KD_PROMOTE k8 steps must divide BK");

// Raw fragments of P consecutive k8 steps starting at ks: B for every n8 tile, A for one m16 tile.
template <int P>
__device__ __forceinline__ void kd_f32_b_frags(float (&b)[P][kNT][2], const float* sb, int wn0, int g,
                                               int t, int ks) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const float* row = sb + (wn0 + nt * 8 + g) * kBLd + ks;
    if constexpr (kF32Vec) {
#pragma unroll
      for (int blk = 0; blk < (P + 1) / 2; ++blk) {
        const float4 v = *reinterpret_cast<const float4*>(row + blk * 16 + 4 * t);
        b[2 * blk][nt][0] = v.x;
        b[2 * blk][nt][1] = v.y;
        if (2 * blk + 1 < P) {
          b[2 * blk + 1][nt][0] = v.z;
          b[2 * blk + 1][nt][1] = v.w;
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) {
        b[j][nt][0] = row[8 * j + t];
        b[j][nt][1] = row[8 * j + t + 4];
      }
    }
  }
}
template <int P>
__device__ __forceinline__ void kd_f32_a_frags(float (&a)[P][4], const float* sa, int r0, int t, int ks) {
  if constexpr (kF32Vec) {
#pragma unroll
    for (int blk = 0; blk < (P + 1) / 2; ++blk) {
      const float4 lo = *reinterpret_cast<const float4*>(sa + r0 * kALd + ks + blk * 16 + 4 * t);
      const float4 hi = *reinterpret_cast<const float4*>(sa + (r0 + 8) * kALd + ks + blk * 16 + 4 * t);
      a[2 * blk][0] = lo.x;
      a[2 * blk][1] = hi.x;
      a[2 * blk][2] = lo.y;
      a[2 * blk][3] = hi.y;
      if (2 * blk + 1 < P) {
        a[2 * blk + 1][0] = lo.z;
        a[2 * blk + 1][1] = hi.z;
        a[2 * blk + 1][2] = lo.w;
        a[2 * blk + 1][3] = hi.w;
      }
    }
  } else {
    // One per-thread base pointer; every fragment is a constant offset from it (pointer arithmetic
    // in 64 bits cannot fold int index constants that NVVM turned into ORs).
    const float* p = KD_TA ? sa + r0 * kALd + ks + t : sa + (ks + t) * kALd + r0;
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        a[j][i] = KD_TA ? p[(i & 1) * 8 * kALd + 8 * j + (i >> 1) * 4]
                        : p[(8 * j + (i >> 1) * 4) * kALd + (i & 1) * 8];
  }
}

__device__ __forceinline__ void kd_compute_tile_f32(float (&acc)[kMT][kNT][4], const float* sa,
                                                    const float* sb, int wm0, int wn0, int lane) {
  constexpr int P = kPromote;
  // With one k8 step per group and k-contiguous operands, a k16 block is loaded once per two groups.
  constexpr int kLoad = kF32Vec && P == 1 ? 2 : P;
  const int g = lane >> 2, t = lane & 3;
  // Not unrolled: with the whole k tile unrolled the compiler hoists every group's fragments and
  // splits, which spills at a 64x32 warp tile.
#pragma unroll 1
  for (int ks = 0; ks < KD_BK; ks += 8 * kLoad) {
    // B's fragments are rounded once per group for all m16 tiles, A's once per m16 tile for all n8
    // tiles.
    float braw[kLoad][kNT][2];
    kd_f32_b_frags<kLoad>(braw, sb, wn0, g, t, ks);
    kd_hilo bs[kLoad][kNT][2];
#pragma unroll
    for (int j = 0; j < kLoad; ++j)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 2; ++i) bs[j][nt][i] = kd_round(braw[j][nt][i]);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      float araw[kLoad][4];
      kd_f32_a_frags<kLoad>(araw, sa, wm0 + mt * 16 + g, t, ks);
      kd_hilo as[kLoad][4];
#pragma unroll
      for (int j = 0; j < kLoad; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) as[j][i] = kd_round(araw[j][i]);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int j0 = 0; j0 < kLoad; j0 += P) {
          float tmp[4] = {0.f, 0.f, 0.f, 0.f};
#if KD_3XTF32
          // The small products first, then hi*hi: the chain's truncation is then relative to the
          // group's own magnitude.
#pragma unroll
          for (int j = j0; j < j0 + P; ++j) {
            const unsigned alo[4] = {as[j][0].lo, as[j][1].lo, as[j][2].lo, as[j][3].lo};
            const unsigned ahi[4] = {as[j][0].hi, as[j][1].hi, as[j][2].hi, as[j][3].hi};
            kd_mma_tf32(tmp, alo, bs[j][nt][0].hi, bs[j][nt][1].hi, tmp);
            kd_mma_tf32(tmp, ahi, bs[j][nt][0].lo, bs[j][nt][1].lo, tmp);
          }
#endif
#pragma unroll
          for (int j = j0; j < j0 + P; ++j) {
            const unsigned ahi[4] = {as[j][0].hi, as[j][1].hi, as[j][2].hi, as[j][3].hi};
            kd_mma_tf32(tmp, ahi, bs[j][nt][0].hi, bs[j][nt][1].hi, tmp);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[mt][nt][i] += tmp[i];
        }
    }
  }
}

// One k tile of the warp's sub-tile: acc[mt][nt] += A(rows) * B(cols). A template on the element
// type so that the branch for the other type is discarded, not compiled.
template <typename T>
__device__ __forceinline__ void kd_compute_tile(float (&acc)[kMT][kNT][4], const T* sa, const T* sb,
                                                int wm0, int wn0, int lane) {
  if constexpr (sizeof(T) == 4) {
    kd_compute_tile_f32(acc, sa, sb, wm0, wn0, lane);
  } else {
#pragma unroll
  for (int ks = 0; ks < KD_BK; ks += kKStep) {
    if constexpr (sizeof(T) != 4) {
      unsigned a[kMT][4], b[kNT][2];
      const int q = lane >> 3, r8 = lane & 7;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const int r0 = wm0 + mt * 16;
        if constexpr (KD_TA) {
          // Matrices: (rows r0.., k ks..), (r0+8.., ks..), (r0.., ks+8..), (r0+8.., ks+8..) = a0..a3.
          kd_ldsm_x4(a[mt], sa + (r0 + r8 + (q & 1) * 8) * kALd + ks + (q >> 1) * 8);
        } else {
          // Stored [k][m]; .trans hands lane (g, t) the pair (k = 2t, 2t+1; m = g) = A(m, k) order.
          kd_ldsm_x4_trans(a[mt], sa + (ks + r8 + (q >> 1) * 8) * kALd + r0 + (q & 1) * 8);
        }
      }
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        // Matrices: (n c0.., k ks..), (c0.., ks+8..), (c0+8.., ks..), (c0+8.., ks+8..).
        unsigned r[4];
        kd_ldsm_x4(r, sb + (wn0 + np * 16 + r8 + (q >> 1) * 8) * kBLd + ks + (q & 1) * 8);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          kd_mma(acc[mt][nt], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b[nt][0], b[nt][1], static_cast<T*>(nullptr));
    }
  }
  }
}

extern "C" __global__ void __launch_bounds__(KD_THREADS, KD_MIN_CTAS) kd_tc_tiled(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(128) unsigned char smem_raw[];
  kd_t* smem = reinterpret_cast<kd_t*>(smem_raw);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm0 = (warp % (KD_BM / KD_WM)) * KD_WM, wn0 = (warp / (KD_BM / KD_WM)) * KD_WN;
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z / KD_SPLITK;
  const int split = static_cast<int>(blockIdx.z % KD_SPLITK);
  const kd_t* A = static_cast<const kd_t*>(args.a) + z * args.stride_a;
  const kd_t* B = static_cast<const kd_t*>(args.b) + z * args.stride_b;
  const long long m0 = static_cast<long long>(blockIdx.x) * KD_BM;
  const long long n0 = static_cast<long long>(blockIdx.y) * KD_BN;

  // This split's k tiles: [kt0, kt1).
  const long long ktiles = (k + KD_BK - 1) / KD_BK;
  const long long per = (ktiles + KD_SPLITK - 1) / KD_SPLITK;
  const long long kt0 = split * per;
  const long long kt1 = kt0 + per < ktiles ? kt0 + per : ktiles;
  const int nk = kt1 > kt0 ? static_cast<int>(kt1 - kt0) : 0;

  // Interior tiles (the CTA's rows and columns inside m and n, the k tile inside k) take the
  // precomputed-offset copy; edge tiles the bounds-checked one.
  const bool inside_mn = m0 + KD_BM <= m && n0 + KD_BN <= n;
  kd_tile_offsets<KD_TA ? KD_BM : KD_BK, KD_TA ? KD_BK : KD_BM> a_off;
  kd_tile_offsets<KD_BN, KD_BK> b_off;
  a_off.init(args.lda, kALd);
  b_off.init(args.ldb, kBLd);
  auto load_stage = [&](int slot, long long kt) {
    kd_t* sa = smem + slot * kStageElems;
    kd_t* sb = sa + kATile;
    const long long kbase = kt * KD_BK;
    if (decltype(a_off)::kEven && decltype(b_off)::kEven && inside_mn && kbase + KD_BK <= k) {
      a_off.copy(sa, kALd, KD_TA ? A + m0 * args.lda + kbase : A + kbase * args.lda + m0);
      b_off.copy(sb, kBLd, B + n0 * args.ldb + kbase);
      return;
    }
    if constexpr (KD_TA)
      kd_load_tile<KD_BM, KD_BK>(sa, kALd, A, args.lda, m, k, m0, kbase);
    else
      kd_load_tile<KD_BK, KD_BM>(sa, kALd, A, args.lda, k, m, kbase, m0);
    kd_load_tile<KD_BN, KD_BK>(sb, kBLd, B, args.ldb, n, k, n0, kbase);
  };

  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

  // Prologue: tiles 0..STAGES-2, one group each (empty groups past the end).
#pragma unroll
  for (int s = 0; s < KD_STAGES - 1; ++s) {
    if (s < nk) load_stage(s, kt0 + s);
    kd_cp_commit();
  }
  // Before iteration i, (STAGES-1) + i groups are committed; waiting until at most STAGES-2 are
  // pending completes group i (tile i). The barrier publishes every thread's copies and retires
  // iteration i-1's reads of slot (i-1) % STAGES, which this iteration then refills.
  for (int i = 0; i < nk; ++i) {
    kd_cp_wait<KD_STAGES - 2>();
    __syncthreads();
    const int next = i + KD_STAGES - 1;
    if (next < nk) load_stage(next % KD_STAGES, kt0 + next);
    kd_cp_commit();
    const kd_t* sa = smem + (i % KD_STAGES) * kStageElems;
    kd_compute_tile<kd_t>(acc, sa, sa + kATile, wm0, wn0, lane);
  }
  kd_cp_wait<0>();

  const int g = lane >> 2, t = lane & 3;
  if constexpr (KD_SPLITK == 1) {
    KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          kd_epilogue(args, C, m0 + wm0 + mt * 16 + g + (i >> 1) * 8, n0 + wn0 + nt * 8 + 2 * t + (i & 1),
                      acc[mt][nt][i]);
  } else {
    // Partial tile to workspace [split][batch][n][m] (f32, column-major like C).
    float* W = static_cast<float*>(args.workspace) + (static_cast<long long>(split) * args.batch + z) * m * n;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const long long row = m0 + wm0 + mt * 16 + g + (i >> 1) * 8;
          const long long col = n0 + wn0 + nt * 8 + 2 * t + (i & 1);
          if (row < m && col < n) W[row + col * m] = acc[mt][nt][i];
        }
  }
}

// Split-K reduction: sums the KD_SPLITK partials of every output in split order (deterministic)
// and applies the epilogue. Grid-stride over batch * m * n outputs, m fastest (coalesced).
extern "C" __global__ void __launch_bounds__(256) kd_tc_tiled_reduce(kd_gemm_args args) {
  const long long m = args.m, n = args.n, mn = m * n, total = mn * args.batch;
  const float* W = static_cast<const float*>(args.workspace);
  for (long long idx = blockIdx.x * 256LL + threadIdx.x; idx < total; idx += 256LL * gridDim.x) {
    const long long z = idx / mn, rem = idx % mn, row = rem % m, col = rem / m;
    float sum = 0.f;
#pragma unroll
    for (int s = 0; s < KD_SPLITK; ++s) sum += W[static_cast<long long>(s) * total + idx];
    kd_epilogue(args, static_cast<KD_C_T*>(args.c) + z * args.stride_c, row, col, sum);
  }
}
