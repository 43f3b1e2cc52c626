// Family row_reduce: rmsnorm, layernorm (forward, optional affine weight and bias) and softmax over
// the last dimension (<kdispatch/rowop.cuh>), f16/bf16/f32 data, f32 arithmetic.
//  - a row group of KD_ROW_THREADS threads (a warp .. the whole block) owns one row; a block holds
//    KD_THREADS / KD_ROW_THREADS groups and grid-strides over rows;
//  - each thread moves KD_VEC elements per access and holds KD_CACHE accesses in registers: a row of
//    at most KD_ROW_THREADS * KD_VEC * KD_CACHE elements is read once, a longer one twice (statistics,
//    then y);
//  - KD_CLUSTER > 1 gives each row a thread-block cluster of KD_CLUSTER blocks, each holding a chunk of
//    it: the blocks exchange their chunks' statistics through distributed shared memory and merge
//    them in rank order (every block alike), so a row too long for one block is still read once;
//  - KD_STAGES > 0 streams the rows through a ring of KD_STAGES shared-memory stages, each one block's
//    rows (or cluster chunk), filled by bulk copies (TMA) that run KD_STAGES rows ahead of the
//    arithmetic: the bytes in flight are the ring's, not the registers', and x is read from DRAM once
//    however the threads revisit it;
//  - KD_HOLD_WB 1 loads each thread's weight and bias once, before the row loop (rows held in one
//    tile: the thread's columns are the same in every row), instead of once per row;
//  - KD_SPLIT > 1 cuts each row into KD_SPLIT chunks, one block each: kd_row_partial writes every
//    chunk's statistics to the workspace, kd_row_finish merges all of its row's partials (every block
//    of the row alike, in one order, so they agree bit for bit) and writes its chunk of y.
// Statistics never cancel: rmsnorm sums x^2; layernorm carries (count, mean, M2) merged by Chan's
// formula, all relative to the row's first element (a shift that keeps rows of mean 1000 and std 0.1
// as exact as rows of mean 0); softmax carries (max, sum of exp(x - max)) merged online.
// Requires x, y, weight and bias 16-byte aligned and cols % KD_VEC == 0 (the host rules pick KD_VEC).
//
// Named parameters:
//   KD_OP 0 rmsnorm | 1 layernorm | 2 softmax    KD_DT 0 f16 | 1 bf16 | 2 f32    KD_HAS_W, KD_HAS_B 0|1
//   KD_THREADS block size (multiple of 32, <= 1024)   KD_ROW_THREADS threads per row (4, 8, 16 or a
//   multiple of 32, dividing KD_THREADS)   KD_VEC elements per access (VEC * element size <= 16)   KD_CACHE accesses
//   held per thread   KD_SPLIT blocks per row (> 1: KD_ROW_THREADS == KD_THREADS)   KD_PDL 0|1
//   KD_CLUSTER blocks per row in a cluster (1, or 2..8 with KD_ROW_THREADS == KD_THREADS, KD_SPLIT 1)
//   KD_HOLD_WB 0|1 (1 only where every row is one tile)   KD_STAGES 0 | 1..8 (16-byte KD_VEC accesses)
//   KD_ONE_TILE 0|1: set by the host from the shape (1: every block's row chunk is one tile). One-tile
//   rows (and ring-staged ones) take exact two-pass statistics of plain sums and maxima; rows read
//   from global memory tile by tile merge per-tile statistics as below.
// Plan: KD_SPLIT == 1: kd_row_main, grid [<= ceil(rows / rows per block) * KD_CLUSTER, a multiple of
//   KD_CLUSTER], block [KD_THREADS]; with KD_STAGES, dynamic shared memory KD_STAGES * rows per block *
//   ceil(cols / KD_VEC / KD_CLUSTER) * 16 bytes.
//   KD_SPLIT > 1: kd_row_partial then kd_row_finish, both grid [KD_SPLIT, rows], block [KD_THREADS],
//   workspace rows * KD_SPLIT * 16 bytes (one float4 per chunk).
#include <kdispatch/rowop.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_OP
#define KD_OP 1
#endif
#ifndef KD_DT
#define KD_DT 2
#endif
#ifndef KD_HAS_W
#define KD_HAS_W 1
#endif
#ifndef KD_HAS_B
#define KD_HAS_B 1
#endif
#ifndef KD_THREADS
#define KD_THREADS 256
#endif
#ifndef KD_ROW_THREADS
#define KD_ROW_THREADS KD_THREADS
#endif
#ifndef KD_VEC
#define KD_VEC 4
#endif
#ifndef KD_CACHE
#define KD_CACHE 4
#endif
#ifndef KD_SPLIT
#define KD_SPLIT 1
#endif
#ifndef KD_PDL
#define KD_PDL 0
#endif
#ifndef KD_CLUSTER
#define KD_CLUSTER 1
#endif
#ifndef KD_HOLD_WB
#define KD_HOLD_WB 0
#endif
#ifndef KD_STAGES
#define KD_STAGES 0
#endif
// Set by the host, not searched: 1 when every row chunk of the keyed shape is one tile.
#ifndef KD_ONE_TILE
#define KD_ONE_TILE 0
#endif

#if KD_THREADS % KD_ROW_THREADS != 0 || (KD_ROW_THREADS % 32 != 0 && 32 % KD_ROW_THREADS != 0)
#error "KD_ROW_THREADS must divide KD_THREADS and be a multiple or a divisor of 32"
#endif
// A group narrower than a warp (short rows: more rows, and more loads in flight per thread) reduces
// within its own aligned lanes: the butterfly starts at half its width.
#define KD_FIRST_MASK (KD_ROW_THREADS >= 32 ? 16 : KD_ROW_THREADS / 2)
#if KD_SPLIT > 1 && KD_ROW_THREADS != KD_THREADS
#error "a split row takes whole blocks"
#endif
#if KD_CLUSTER > 1 && (KD_SPLIT > 1 || KD_ROW_THREADS != KD_THREADS || KD_CLUSTER > 8)
#error "a cluster row takes whole blocks, at most 8, in one launch"
#endif
#if KD_HOLD_WB && KD_SPLIT > 1
#error "held weights need rows held in one tile"
#endif
#if KD_STAGES > 0 && KD_SPLIT > 1
#error "staged rows are read in one launch"
#endif

#define KD_NEG_INF __uint_as_float(0xff800000u)  // NVRTC has no <math.h> INFINITY
#define KD_ROWS_PER_BLOCK (KD_THREADS / KD_ROW_THREADS)
#define KD_WARPS_PER_ROW (KD_ROW_THREADS / 32)
#define KD_TILE ((long long)KD_ROW_THREADS * KD_CACHE)  // vectors a row group covers per tile
// At least 1024 resident threads per SM, so at most 64 registers per thread: enough bytes in flight
// for a memory-bound kernel, and the register cache (host rule: KD_VEC * KD_CACHE <= 24) fits
// without spills.
#define KD_MIN_BLOCKS (KD_THREADS >= 1024 ? 1 : 1024 / KD_THREADS)

#if KD_DT == 0
typedef __half kd_t;
#elif KD_DT == 1
typedef __nv_bfloat16 kd_t;
#else
typedef float kd_t;
#endif

// exp of an element's distance below the row's max. 16-bit outputs keep 8 to 11 bits, so the
// hardware exponential (2 ulp of f32) is exact enough and costs a few instructions where expf costs
// a range reduction; f32 outputs keep expf.
__device__ __forceinline__ float kd_exp(float d) {
#if KD_DT == 2
  return expf(d);
#else
  return __expf(d);
#endif
}

// 16-bit softmax: the exponential's argument folded into one fused multiply-add, exp2(x log2 e -
// max log2 e) on the hardware unit (about 25 instructions per element had made 16-bit softmax
// instruction-bound on an H200); the fold rounds the row's max once, a few f32 ulps, far below a
// 16-bit output's. 16-bit layernorm keeps its exact x - shift - mean: a folded mean would cost
// output bits where the mean is large against the deviations (the gate's mean-1000 rows). Affine
// outputs take y * w + b as one fused multiply-add (one rounding instead of two).
#define KD_FOLD (KD_DT != 2)
#if KD_FOLD
__device__ __forceinline__ float kd_ex2(float t) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
}
#define KD_LOG2E 1.4426950408889634f
#endif

__device__ __forceinline__ float kd_f(float v) { return v; }
__device__ __forceinline__ float kd_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float kd_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void kd_round(float v, float& out) { out = v; }
__device__ __forceinline__ void kd_round(float v, __half& out) { out = __float2half_rn(v); }
__device__ __forceinline__ void kd_round(float v, __nv_bfloat16& out) { out = __float2bfloat16_rn(v); }

struct alignas(sizeof(kd_t) * KD_VEC) kd_vec {
  kd_t e[KD_VEC];
};
template <int Bytes> struct kd_word;
template <> struct kd_word<2> { typedef unsigned short type; };
template <> struct kd_word<4> { typedef unsigned type; };
template <> struct kd_word<8> { typedef uint2 type; };
template <> struct kd_word<16> { typedef uint4 type; };
typedef kd_word<sizeof(kd_vec)>::type kd_word_t;

// y is written once and not read here again: streaming stores keep x (re-read) and the weights in L2.
__device__ __forceinline__ void kd_store_streaming(kd_vec* p, const kd_vec& v) {
  kd_word_t w;
  memcpy(&w, &v, sizeof w);
  __stcs(reinterpret_cast<kd_word_t*>(p), w);
}

// ---- statistics: identity, symmetric merge (merge(a, b) == merge(b, a) bit for bit, so every lane of
// a butterfly ends with the same value; the _rn intrinsics keep FMA contraction from breaking that),
// warp shuffle, and the float4 image of a split's partial.
#if KD_OP == 0
struct kd_stat {
  float ss;  // sum of x^2
};
__device__ __forceinline__ kd_stat kd_none() { return {0.f}; }
__device__ __forceinline__ kd_stat kd_merge(kd_stat a, kd_stat b) { return {a.ss + b.ss}; }
__device__ __forceinline__ kd_stat kd_shfl(kd_stat a, int mask) {
  return {__shfl_xor_sync(0xffffffffu, a.ss, mask)};
}
__device__ __forceinline__ float4 kd_pack(kd_stat a) { return make_float4(a.ss, 0.f, 0.f, 0.f); }
__device__ __forceinline__ kd_stat kd_unpack(float4 v) { return {v.x}; }
#elif KD_OP == 1
struct kd_stat {
  float n;     // elements
  float mean;  // their mean minus the row's shift
  float m2;    // sum of squared deviations from their mean
};
__device__ __forceinline__ kd_stat kd_none() { return {0.f, 0.f, 0.f}; }
// Chan et al.'s pairwise update. The weighted mean (n_a m_a + n_b m_b) / n is as exact as
// m_a + delta n_b / n here because the means are shifted to the row's scale of variation.
__device__ __forceinline__ kd_stat kd_merge(kd_stat a, kd_stat b) {
  if (a.n == 0.f) return b;
  if (b.n == 0.f) return a;
  const float n = a.n + b.n;
  const float delta = b.mean - a.mean;
  const float mean = __fdiv_rn(__fadd_rn(__fmul_rn(a.n, a.mean), __fmul_rn(b.n, b.mean)), n);
  const float weight = __fdiv_rn(__fmul_rn(a.n, b.n), n);
  return {n, mean, __fadd_rn(a.m2 + b.m2, __fmul_rn(__fmul_rn(delta, delta), weight))};
}
__device__ __forceinline__ kd_stat kd_shfl(kd_stat a, int mask) {
  return {__shfl_xor_sync(0xffffffffu, a.n, mask), __shfl_xor_sync(0xffffffffu, a.mean, mask),
          __shfl_xor_sync(0xffffffffu, a.m2, mask)};
}
__device__ __forceinline__ float4 kd_pack(kd_stat a) { return make_float4(a.n, a.mean, a.m2, 0.f); }
__device__ __forceinline__ kd_stat kd_unpack(float4 v) { return {v.x, v.y, v.z}; }
#else
struct kd_stat {
  float max;  // -inf with no elements
  float sum;  // sum of exp(x - max)
};
__device__ __forceinline__ kd_stat kd_none() { return {KD_NEG_INF, 0.f}; }
__device__ __forceinline__ kd_stat kd_merge(kd_stat a, kd_stat b) {
  const float m = fmaxf(a.max, b.max);
  // An empty side (sum 0, max -inf) would make exp(-inf - -inf) a NaN.
  const float ea = a.sum == 0.f ? 0.f : __fmul_rn(a.sum, expf(a.max - m));
  const float eb = b.sum == 0.f ? 0.f : __fmul_rn(b.sum, expf(b.max - m));
  return {m, __fadd_rn(ea, eb)};
}
__device__ __forceinline__ kd_stat kd_shfl(kd_stat a, int mask) {
  return {__shfl_xor_sync(0xffffffffu, a.max, mask), __shfl_xor_sync(0xffffffffu, a.sum, mask)};
}
__device__ __forceinline__ float4 kd_pack(kd_stat a) { return make_float4(a.max, a.sum, 0.f, 0.f); }
__device__ __forceinline__ kd_stat kd_unpack(float4 v) { return {v.x, v.y}; }
#endif

// ---- one row segment: vectors [v0, v1) of a row, this thread's share of it tile by tile --------

// How many of this thread's KD_CACHE accesses in the tile at vector `base` fall before v1 (access i
// is vector base + t + i * KD_ROW_THREADS). Small ints keep the unrolled bounds checks cheap.
__device__ __forceinline__ int kd_accesses(long long base, long long v1, int t) {
  const long long left = v1 - base - t;
  if (left <= 0) return 0;
  return left >= KD_TILE ? KD_CACHE : (int)((left + KD_ROW_THREADS - 1) / KD_ROW_THREADS);
}

__device__ __forceinline__ void kd_load_tile(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE]) {
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) v[i] = p[i * KD_ROW_THREADS];
}

// Folds the first n of this thread's accesses in `v` into its statistics `s`.
__device__ __forceinline__ void kd_tile_add(kd_stat& s, const kd_vec (&v)[KD_CACHE], int n, float shift) {
  if (n == 0) return;
#if KD_OP == 0
  (void)shift;
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n)
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) {
        const float x = kd_f(v[i].e[k]);
        ss = fmaf(x, x, ss);
      }
  s.ss += ss;
#elif KD_OP == 1
  // Two passes over registers: the tile's own mean, then squared deviations from it.
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n)
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) sum += kd_f(v[i].e[k]) - shift;
  const float count = (float)(n * KD_VEC);
  const float mean = sum / count;
  float m2 = 0.f;
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n)
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) {
        const float d = (kd_f(v[i].e[k]) - shift) - mean;
        m2 = fmaf(d, d, m2);
      }
  s = kd_merge(s, kd_stat{count, mean, m2});
#else
  (void)shift;
  // Exponents relative to the running max, so the sum is rescaled (one more rounding) only when the
  // max grows, not once per tile.
  float m = s.max;
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n)
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) m = fmaxf(m, kd_f(v[i].e[k]));
  // Nothing but -inf so far (a masked stretch) adds nothing; exp(-inf - -inf) would be a NaN.
  if (m == KD_NEG_INF) return;
  float sum = s.sum == 0.f ? 0.f : s.sum * expf(s.max - m);
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n)
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) sum += kd_exp(kd_f(v[i].e[k]) - m);
  s = {m, sum};
#endif
}

// This thread's statistics of vectors [v0, v1) of row xr; `v` is left holding its last tile (the
// whole segment when it is one tile).
__device__ __forceinline__ kd_stat kd_segment_stat(const kd_vec* xr, long long v0, long long v1, int t, float shift,
                                                   kd_vec (&v)[KD_CACHE]) {
  kd_stat s = kd_none();
  for (long long base = v0; base < v1; base += KD_TILE) {
    const int n = kd_accesses(base, v1, t);
    kd_load_tile(xr + base + t, n, v);
    kd_tile_add(s, v, n, shift);
  }
  return s;
}

// The merge of each aligned group of W lanes' statistics, in every lane of the group (the merge is
// symmetric, so a butterfly leaves the same bits in all of them).
template <int W>
__device__ __forceinline__ kd_stat kd_lanes_reduce(kd_stat s) {
#pragma unroll
  for (int mask = W / 2; mask >= 1; mask >>= 1) s = kd_merge(s, kd_shfl(s, mask));
  return s;
}
// Over a warp, or over a sub-warp row group.
__device__ __forceinline__ kd_stat kd_warp_reduce(kd_stat s) { return kd_lanes_reduce<2 * KD_FIRST_MASK>(s); }

// The statistics of a whole row group, the same in every thread of it. All threads of the block call
// it together (it may hold block barriers); `red` is shared, one slot per warp.
__device__ __forceinline__ kd_stat kd_row_reduce(kd_stat s, kd_stat* red) {
  s = kd_warp_reduce(s);
#if KD_WARPS_PER_ROW > 1
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = warp - warp % KD_WARPS_PER_ROW;
  if (lane == 0) red[warp] = s;
  __syncthreads();
  // Every warp of the group merges the group's partials in a butterfly of its own over lanes that
  // each hold partial lane % W: the same inputs in the same lanes give every warp the same result.
  s = kd_lanes_reduce<KD_WARPS_PER_ROW>(red[first + lane % KD_WARPS_PER_ROW]);
  __syncthreads();  // the slots are written again by the next reduction
#endif
  return s;
}

// Sums and maxima of one float over a row group, the same bits in every thread of it (IEEE addition
// and fmaxf are commutative, so butterfly partners agree). All threads of the block call them
// together; `red` is shared, one float per warp.
template <bool Max>
__device__ __forceinline__ float kd_combine(float a, float b) {
  return Max ? fmaxf(a, b) : a + b;
}
template <bool Max>
__device__ __forceinline__ float kd_group_float(float v, float* red) {
#pragma unroll
  for (int mask = KD_FIRST_MASK; mask >= 1; mask >>= 1) v = kd_combine<Max>(v, __shfl_xor_sync(0xffffffffu, v, mask));
#if KD_WARPS_PER_ROW > 1
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = warp - warp % KD_WARPS_PER_ROW;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[first + lane % KD_WARPS_PER_ROW];
#pragma unroll
  for (int mask = KD_WARPS_PER_ROW / 2; mask >= 1; mask >>= 1)
    v = kd_combine<Max>(v, __shfl_xor_sync(0xffffffffu, v, mask));
  __syncthreads();
#endif
  return v;
}

// Tells the compiler the tile's packed words may have changed, so each pass converts them again
// instead of keeping every converted f32 value live across the reductions: 16-bit tiles of 32 values
// then take 16 registers, not 32 (and do not spill at 64).
__device__ __forceinline__ void kd_refresh(kd_vec (&v)[KD_CACHE]) {
#if KD_DT != 2 && KD_VEC >= 2
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i) {
    unsigned w[sizeof(kd_vec) / 4];
    memcpy(w, &v[i], sizeof w);
#pragma unroll
    for (int j = 0; j < (int)(sizeof(kd_vec) / 4); ++j) asm volatile("" : "+r"(w[j]));
    memcpy(&v[i], w, sizeof w);
  }
#else
  (void)v;
#endif
}

// Exact two-pass statistics of the group's segment, vectors [v0, v1) at `src` (in `v` already when
// `one_tile`, else re-read tile by tile: from the shared-memory ring, where a re-read costs no DRAM
// traffic). The passes reduce plain sums and maxima, a few instructions per element, where the merge
// path's Chan and online updates cost divisions and exponentials at every step: with wide row groups
// those dominated (an H200 ran 16384 x 8192 bf16 layernorm instruction-bound). rmsnorm needs one pass.
// Calls f on each of this thread's values of vectors [v0, v1) at `src`, tile by tile, as f32 (the
// tiles already in `v` when `one_tile`, else loaded into it).
template <typename F>
__device__ __forceinline__ void kd_each_value(const kd_vec* src, long long v0, long long v1, int t, bool one_tile,
                                              kd_vec (&v)[KD_CACHE], F f) {
  for (long long base = v0; base < v1; base += KD_TILE) {
    const int n = kd_accesses(base, v1, t);
    if (!one_tile) kd_load_tile(src + base + t, n, v);
#pragma unroll
    for (int i = 0; i < KD_CACHE; ++i)
      if (i < n)
#pragma unroll
        for (int k = 0; k < KD_VEC; ++k) f(kd_f(v[i].e[k]));
  }
}

__device__ __forceinline__ kd_stat kd_segment_stat2(const kd_vec* src, long long v0, long long v1, int t, float shift,
                                                    bool one_tile, kd_vec (&v)[KD_CACHE], float* red) {
#if KD_OP == 0
  (void)shift;
  float ss = 0.f;
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) { ss = fmaf(x, x, ss); });
  return kd_stat{kd_group_float<false>(ss, red)};
#else
  float a = KD_OP == 1 ? 0.f : KD_NEG_INF;
#if KD_OP == 1
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) { a += x - shift; });
#else
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) { a = fmaxf(a, x); });
#endif
  if (one_tile) kd_refresh(v);
#if KD_OP == 1
  const float count = (float)((v1 - v0) * KD_VEC);
  const float center = count > 0.f ? kd_group_float<false>(a, red) / count : kd_group_float<false>(a, red);
#else
  const float center = kd_group_float<true>(a, red);  // the row's (chunk's) max
#endif
  float b = 0.f;
#if KD_OP == 1
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) {
    const float d = (x - shift) - center;
    b = fmaf(d, d, b);
  });
#elif KD_FOLD
  const float folded = -center * KD_LOG2E;
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) { b += kd_ex2(fmaf(x, KD_LOG2E, folded)); });
#else
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) { b += kd_exp(x - center); });
#endif
  if (one_tile) kd_refresh(v);
  b = kd_group_float<false>(b, red);
#if KD_OP == 1
  return count > 0.f ? kd_stat{count, center, b} : kd_none();
#else
  return center == KD_NEG_INF && b == 0.f ? kd_none() : kd_stat{center, b};
#endif
#endif
}

#if KD_CLUSTER > 1
#define KD_ROW_CLUSTER_DIMS __cluster_dims__(KD_CLUSTER, 1, 1)
// Cluster barrier: releases this block's shared-memory writes to, and acquires those of, every block
// of the cluster. Every thread of every block executes it.
__device__ __forceinline__ void kd_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned kd_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// The statistics block `rank` of the cluster holds at the shared address `slot` has in this block.
__device__ __forceinline__ kd_stat kd_peer_stat(const kd_stat* slot, int rank) {
  const unsigned local = (unsigned)__cvta_generic_to_shared(slot);
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  float f[sizeof(kd_stat) / sizeof(float)];
#pragma unroll
  for (int k = 0; k < (int)(sizeof(kd_stat) / sizeof(float)); ++k)
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(f[k]) : "r"(remote + 4u * k) : "memory");
  kd_stat s;
  memcpy(&s, f, sizeof s);
  return s;
}
// The row's statistics from every block's `s` (the same in each thread of a block): each block
// publishes its own in slots[parity], and every warp of every block merges the KD_CLUSTER of them in
// a butterfly over lanes that each hold block lane % KD_CLUSTER's, so all blocks agree bit for bit. Two slots, alternated per row:
// a block writes a slot again only after the next row's barrier, which every peer reaches after it
// has read the slot.
__device__ __forceinline__ kd_stat kd_cluster_reduce(kd_stat s, kd_stat* slots, int parity) {
  if (threadIdx.x == 0) slots[parity] = s;
  kd_cluster_sync();
  const int lane = threadIdx.x % 32;
  return kd_lanes_reduce<KD_CLUSTER>(kd_peer_stat(&slots[parity], lane % KD_CLUSTER));
}
#else
#define KD_ROW_CLUSTER_DIMS
#endif

// What y needs from the row's statistics: rmsnorm y = x * scale; layernorm y = ((x - shift) - center)
// * scale, exact in x - shift where x is near the shift; softmax y = exp(x - center) * scale.
struct kd_norm {
  float center, scale;
};
__device__ __forceinline__ kd_norm kd_norm_of(kd_stat s, const kd_row_args& args) {
#if KD_OP == 0
  return {0.f, rsqrtf(s.ss / (float)args.cols + args.eps)};
#elif KD_OP == 1
  return {s.mean, rsqrtf(s.m2 / (float)args.cols + args.eps)};
#else
  return {s.max, 1.f / s.sum};  // one division per row, a multiplication per element
#endif
}

// Writes y for vectors [v0, v1) of the row, reading x again unless `held` (v holds the segment's
// only tile).
// A thread's weight and bias for one tile (KD_HOLD_WB: loaded once, before the row loop).
struct kd_wb {
#if KD_HAS_W
  kd_vec w[KD_CACHE];
#endif
#if KD_HAS_B
  kd_vec b[KD_CACHE];
#endif
};
__device__ __forceinline__ void kd_load_wb(const kd_row_args& args, long long at, int n, kd_wb& wb) {
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) {
#if KD_HAS_W
      wb.w[i] = static_cast<const kd_vec*>(args.weight)[at + i * KD_ROW_THREADS];
#endif
#if KD_HAS_B
      wb.b[i] = static_cast<const kd_vec*>(args.bias)[at + i * KD_ROW_THREADS];
#endif
    }
  (void)args;
  (void)at;
}

// `wb` holds the weight and bias of the segment's only tile when `use_wb`.
__device__ __forceinline__ void kd_segment_write(const kd_row_args& args, const kd_vec* xr, kd_vec* yr, long long v0,
                                                 long long v1, int t, kd_stat s, float shift, bool held,
                                                 kd_vec (&v)[KD_CACHE], const kd_wb& wb, bool use_wb) {
  const kd_norm nm = kd_norm_of(s, args);
#if KD_OP != 1
  (void)shift;
#endif
#if KD_FOLD && KD_OP == 2
  const float offset = -nm.center * KD_LOG2E;  // y = exp2(x log2 e + offset) * scale
#endif
  for (long long base = v0; base < v1; base += KD_TILE) {
    const int n = kd_accesses(base, v1, t);
    const long long at = base + t;
    if (!held) kd_load_tile(xr + at, n, v);
#pragma unroll
    for (int i = 0; i < KD_CACHE; ++i) {
      if (i >= n) continue;
#if KD_HAS_W
      const kd_vec w = use_wb ? wb.w[i] : static_cast<const kd_vec*>(args.weight)[at + i * KD_ROW_THREADS];
#endif
#if KD_HAS_B
      const kd_vec b = use_wb ? wb.b[i] : static_cast<const kd_vec*>(args.bias)[at + i * KD_ROW_THREADS];
#endif
      kd_vec out;
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) {
        const float x = kd_f(v[i].e[k]);
#if KD_OP == 0
        float y = x * nm.scale;
#elif KD_OP == 1
        float y = ((x - shift) - nm.center) * nm.scale;
#elif KD_FOLD
        float y = kd_ex2(fmaf(x, KD_LOG2E, offset)) * nm.scale;
#else
        float y = kd_exp(x - nm.center) * nm.scale;
#endif
#if KD_HAS_W && KD_HAS_B && KD_FOLD
        y = fmaf(y, kd_f(w.e[k]), kd_f(b.e[k]));
#else
#if KD_HAS_W
        y *= kd_f(w.e[k]);
#endif
#if KD_HAS_B
        y += kd_f(b.e[k]);
#endif
#endif
        kd_round(y, out.e[k]);
      }
      kd_store_streaming(yr + at + i * KD_ROW_THREADS, out);
    }
  }
}

// The shift layernorm's statistics are taken relative to: the row's first element.
__device__ __forceinline__ float kd_shift_of(const kd_vec* xr) {
#if KD_OP == 1
  return kd_f(xr[0].e[0]);
#else
  (void)xr;
  return 0.f;
#endif
}

// The ring's mbarriers and bulk copies (sm_90).
#include "bulk_copy.cuh"

#if KD_SPLIT == 1

extern "C" __global__ void __launch_bounds__(KD_THREADS, KD_MIN_BLOCKS) KD_ROW_CLUSTER_DIMS kd_row_main(kd_row_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  __shared__ kd_stat red[KD_THREADS / 32];
  __shared__ float redf[KD_THREADS / 32];
  const int t = threadIdx.x % KD_ROW_THREADS;
  const int group = threadIdx.x / KD_ROW_THREADS;
  const long long nvec = args.cols / KD_VEC;
#if KD_CLUSTER > 1
  __shared__ kd_stat slots[2];
  // Block `rank` of a row's cluster holds vectors [c0, c1) of it.
  const long long rank = kd_cluster_rank(), per = (nvec + KD_CLUSTER - 1) / KD_CLUSTER;
  const long long c0 = min(nvec, rank * per), c1 = min(nvec, c0 + per);
  const long long first = (long long)blockIdx.x / KD_CLUSTER, step = (long long)gridDim.x / KD_CLUSTER;
  int parity = 0;
#else
  const long long c0 = 0, c1 = nvec;
  const long long first = (long long)blockIdx.x * KD_ROWS_PER_BLOCK, step = (long long)gridDim.x * KD_ROWS_PER_BLOCK;
#endif
#if KD_ONE_TILE
  const bool one_tile = true;  // the host's promise for this shape: the compiler drops the merge path
#else
  const bool one_tile = c1 - c0 <= KD_TILE;
#endif
#if KD_HOLD_WB && (KD_HAS_W || KD_HAS_B)
  // The thread's columns are the same in every row: their weight and bias are read once.
  kd_wb wb;
  if (one_tile) kd_load_wb(args, c0 + t, kd_accesses(c0, c1, t), wb);
  const bool use_wb = one_tile;
#else
  kd_wb wb;
  const bool use_wb = false;
#endif
#if KD_STAGES > 0
  static_assert(sizeof(kd_vec) == 16, "bulk copies move 16-byte multiples");
  // Stage k holds the chunks [c0, c1) of the block's rows of its row step, one after another: the
  // rows are consecutive, so a stage is one contiguous copy (a cluster block's one row chunk).
  extern __shared__ __align__(128) unsigned char kd_ring[];
  __shared__ unsigned long long kd_full[KD_STAGES];
  const long long chunk = c1 - c0, stage_vecs = chunk * KD_ROWS_PER_BLOCK;
  kd_vec* const ring = reinterpret_cast<kd_vec*>(kd_ring);
  const kd_vec* const x = static_cast<const kd_vec*>(args.x);
  // Thread 0 fills stage k with the rows from r0.
  auto fill = [&](int k, long long r0) {
    const long long live_rows = min((long long)KD_ROWS_PER_BLOCK, args.rows - r0);
    const unsigned bytes = (unsigned)(live_rows * chunk * (long long)sizeof(kd_vec));
    kd_mbar_expect_tx(&kd_full[k], bytes);
    if (bytes > 0) kd_bulk_copy(ring + k * stage_vecs, x + r0 * nvec + c0, bytes, &kd_full[k]);
  };
  if (threadIdx.x == 0) {
    for (int k = 0; k < KD_STAGES; ++k) kd_mbar_init(&kd_full[k], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int k = 0; k < KD_STAGES && first + k * step < args.rows; ++k) fill(k, first + k * step);
  }
  __syncthreads();
  long long it = 0;
#endif
  // Every group runs every iteration (a group past the last row with an empty segment), so the block
  // (and cluster) barriers are reached by all threads.
  for (long long row0 = first; row0 < args.rows; row0 += step) {
    const long long row = row0 + group;
    const bool live = row < args.rows;
    const long long at = (live ? row : 0) * nvec;
    const kd_vec* xr = static_cast<const kd_vec*>(args.x) + at;
    kd_vec* yr = static_cast<kd_vec*>(args.y) + at;
    const long long v0 = live ? c0 : 0, v1 = live ? c1 : 0;
    const float shift = kd_shift_of(xr);
#if KD_STAGES > 0
    const int stage = (int)(it % KD_STAGES);
    kd_mbar_wait(&kd_full[stage], (unsigned)((it / KD_STAGES) & 1));
    // The row's chunk in the ring, indexed like the row (vector c0 first).
    const kd_vec* src = ring + stage * stage_vecs + group * chunk - c0;
#else
    const kd_vec* src = xr;
#endif
    kd_vec v[KD_CACHE];
    kd_stat s;
    // The exact two passes where they read registers or shared memory; from global memory the merge
    // path reads x once for the statistics (twice in all, with y).
    if (one_tile || KD_STAGES > 0) {
      if (one_tile) kd_load_tile(src + v0 + t, kd_accesses(v0, v1, t), v);
      s = kd_segment_stat2(src, v0, v1, t, shift, one_tile, v, redf);
    } else {
      s = kd_row_reduce(kd_segment_stat(src, v0, v1, t, shift, v), red);
    }
#if KD_CLUSTER > 1
    s = kd_cluster_reduce(s, slots, parity);
    parity ^= 1;
#endif
    kd_segment_write(args, src, yr, v0, v1, t, s, shift, one_tile, v, wb, use_wb);
#if KD_STAGES > 0
    __syncthreads();  // every thread is done with the stage: refill it KD_STAGES row steps ahead
    if (threadIdx.x == 0 && row0 + KD_STAGES * step < args.rows) fill(stage, row0 + KD_STAGES * step);
    ++it;
#endif
  }
#if KD_CLUSTER > 1
  kd_cluster_sync();  // no block leaves while a peer may still read its slots
#endif
}

#else

// Block blockIdx.x's chunk of row blockIdx.y: vectors [v0, v1), possibly empty.
struct kd_chunk {
  long long v0, v1;
};
__device__ __forceinline__ kd_chunk kd_chunk_of(long long nvec) {
  const long long per = (nvec + KD_SPLIT - 1) / KD_SPLIT;
  const long long v0 = min(nvec, (long long)blockIdx.x * per);
  return {v0, min(nvec, v0 + per)};
}

extern "C" __global__ void __launch_bounds__(KD_THREADS, KD_MIN_BLOCKS) kd_row_partial(kd_row_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  __shared__ kd_stat red[KD_THREADS / 32];
  const long long nvec = args.cols / KD_VEC;
  const long long row = blockIdx.y;
  const kd_chunk c = kd_chunk_of(nvec);
  const kd_vec* xr = static_cast<const kd_vec*>(args.x) + row * nvec;
  kd_vec v[KD_CACHE];
  kd_stat s = kd_segment_stat(xr, c.v0, c.v1, threadIdx.x, kd_shift_of(xr), v);
  s = kd_row_reduce(s, red);
  if (threadIdx.x == 0) static_cast<float4*>(args.workspace)[row * KD_SPLIT + blockIdx.x] = kd_pack(s);
}

extern "C" __global__ void __launch_bounds__(KD_THREADS, KD_MIN_BLOCKS) kd_row_finish(kd_row_args args) {
  // Always, whether or not the plan made this launch a programmatic dependent: the partials are
  // kd_row_partial's (without PDL the wait returns at once).
  KD_GRID_DEPENDENCY_WAIT();
  __shared__ kd_stat red[KD_THREADS / 32];
  const long long nvec = args.cols / KD_VEC;
  const long long row = blockIdx.y;
  const kd_chunk c = kd_chunk_of(nvec);
  const kd_vec* xr = static_cast<const kd_vec*>(args.x) + row * nvec;
  kd_vec v[KD_CACHE];
  // A chunk of one tile is loaded first, so its latency overlaps the partials' merge.
  const bool held = c.v1 - c.v0 <= KD_TILE;
  if (held) kd_load_tile(xr + c.v0 + threadIdx.x, kd_accesses(c.v0, c.v1, threadIdx.x), v);
  const float shift = kd_shift_of(xr);
  // Every block of the row merges the same partials in the same order: the same statistics.
  const float4* partials = static_cast<const float4*>(args.workspace) + row * KD_SPLIT;
  kd_stat s = kd_none();
  for (int i = threadIdx.x; i < KD_SPLIT; i += KD_THREADS) s = kd_merge(s, kd_unpack(partials[i]));
  s = kd_row_reduce(s, red);
  kd_segment_write(args, xr, static_cast<kd_vec*>(args.y) + row * nvec, c.v0, c.v1, threadIdx.x, s, shift, held, v,
                   kd_wb{}, false);
}

#endif
