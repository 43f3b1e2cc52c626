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
//  - KD_PREFETCH 1 has one lane of each group ask the L2 for the group's next row (a bulk prefetch)
//    as it starts a row, so DRAM streams through the group's reduce and write phases;
//  - KD_NO_L1 1 reads x (read once) past L1, which then keeps the weight and bias;
//  - a row read twice from global memory keeps its lines in L2 between the reads (evict_last on the
//    first, evict-first on the second);
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
//   KD_PREFETCH 0|1 (KD_SPLIT 1, no ring)   KD_NO_L1 0|1
//   KD_ONE_TILE 0|1: set by the host from the shape (1: every block's row chunk is one tile). One-tile
//   rows (and ring-staged ones) take exact two-pass statistics of plain sums and maxima; rows read
//   from global memory tile by tile merge per-tile statistics as below. KD_FULL_TILE 0|1: set by the
//   host (1: every chunk is exactly one full tile, so no access needs a bounds check).
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
#ifndef KD_PREFETCH
#define KD_PREFETCH 0
#endif
#ifndef KD_NO_L1
#define KD_NO_L1 0
#endif
// Set by the host, not searched: 1 when every row chunk of the keyed shape is one tile.
#ifndef KD_ONE_TILE
#define KD_ONE_TILE 0
#endif
// Set by the host, not searched: 1 when every live thread's tile is full (the row chunk is exactly
// KD_ROW_THREADS * KD_CACHE vectors), so the per-access bounds checks compile away.
#ifndef KD_FULL_TILE
#define KD_FULL_TILE 0
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
#if KD_PREFETCH > 0 && (KD_SPLIT > 1 || KD_STAGES > 0)
#error "prefetched rows are read from global memory in one launch"
#endif
#if KD_FULL_TILE && !KD_ONE_TILE
#error "a full tile is one tile"
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
// 16-bit output's. Layernorm takes x - mean with the mean rounded once to f32 (as the framework's
// kernel does), never a mean folded into x * scale: that would cost output bits where the mean is
// large against the deviations (the gate's mean-1000 rows). Affine 16-bit outputs take y * w + b as
// one fused multiply-add (one rounding instead of two).
#define KD_FOLD (KD_DT != 2)
#if KD_FOLD
__device__ __forceinline__ float kd_ex2(float t) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
}
#define KD_LOG2E 1.4426950408889634f
#endif

template <int Bytes> struct kd_word;
template <> struct kd_word<2> { typedef unsigned short type; };
template <> struct kd_word<4> { typedef unsigned type; };
template <> struct kd_word<8> { typedef uint2 type; };
template <> struct kd_word<16> { typedef uint4 type; };
typedef kd_word<sizeof(kd_t) * KD_VEC>::type kd_word_t;

// KD_VEC elements, held as the whole words one access moves. Registers hold words, never 16-bit
// halves: with an array of 16-bit elements the compiler kept each half in a register of its own and
// merged them back with byte permutes around every predicated load (H200 SASS of 16-bit layernorm:
// about a third of its instructions, and a spill).
struct alignas(sizeof(kd_t) * KD_VEC) kd_vec {
  kd_word_t w;
};

// A vector's elements as f32: bf16 by a shift or a mask of its word, f16 by the paired conversion.
__device__ __forceinline__ void kd_floats(const kd_vec& v, float (&f)[KD_VEC]) {
#if KD_DT == 2
  memcpy(f, &v.w, sizeof f);
#elif KD_VEC == 1
#if KD_DT == 1
  f[0] = __uint_as_float((unsigned)v.w << 16);
#else
  f[0] = __half2float(__ushort_as_half(v.w));
#endif
#else
  unsigned w[KD_VEC / 2];
  memcpy(w, &v.w, sizeof w);
#pragma unroll
  for (int j = 0; j < KD_VEC / 2; ++j) {
#if KD_DT == 1
    // Volatile: converted again at each use, never kept across passes in 32 more registers.
    unsigned lo, hi;
    asm volatile("shl.b32 %0, %1, 16;" : "=r"(lo) : "r"(w[j]));
    asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(hi) : "r"(w[j]));
    f[2 * j] = __uint_as_float(lo);
    f[2 * j + 1] = __uint_as_float(hi);
#else
    __half2 h;
    memcpy(&h, &w[j], sizeof h);
    const float2 p = __half22float2(h);
    f[2 * j] = p.x;
    f[2 * j + 1] = p.y;
#endif
  }
#endif
}

// f32 values rounded to nearest into a vector (16-bit pairs by one paired conversion).
__device__ __forceinline__ void kd_pack_floats(const float (&f)[KD_VEC], kd_vec& out) {
#if KD_DT == 2
  memcpy(&out.w, f, sizeof f);
#elif KD_VEC == 1
#if KD_DT == 1
  out.w = __bfloat16_as_ushort(__float2bfloat16_rn(f[0]));
#else
  out.w = __half_as_ushort(__float2half_rn(f[0]));
#endif
#else
  unsigned w[KD_VEC / 2];
#pragma unroll
  for (int j = 0; j < KD_VEC / 2; ++j) {
#if KD_DT == 1
    const __nv_bfloat162 p = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
#else
    const __half2 p = __floats2half2_rn(f[2 * j], f[2 * j + 1]);
#endif
    memcpy(&w[j], &p, sizeof p);
  }
  memcpy(&out.w, w, sizeof w);
#endif
}

// The first element of a vector.
__device__ __forceinline__ float kd_first(const kd_vec& v) {
  float f[KD_VEC];
  kd_floats(v, f);
  return f[0];
}

// y is written once and not read here again: streaming stores keep x (re-read) and the weights in L2.
__device__ __forceinline__ void kd_store_streaming(kd_vec* p, const kd_vec& v) {
  __stcs(&p->w, v.w);
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
#if KD_FULL_TILE
  (void)t;
  return v1 > base ? KD_CACHE : 0;  // a live row's tile is full, a dead one (v0 == v1) empty
#endif
  const long long left = v1 - base - t;
  if (left <= 0) return 0;
  return left >= KD_TILE ? KD_CACHE : (int)((left + KD_ROW_THREADS - 1) / KD_ROW_THREADS);
}

__device__ __forceinline__ void kd_load_tile(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE]) {
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) v[i] = p[i * KD_ROW_THREADS];
}
// Loads the first n of this thread's accesses at p (16-byte vectors) with load(address, words).
template <typename Load>
__device__ __forceinline__ void kd_load_tile_words(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE], Load load) {
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) {
      unsigned w[4];
      load(p + i * KD_ROW_THREADS, w);
      memcpy(&v[i], w, sizeof(kd_vec));
    }
}
// A tile of x from global memory, read once. KD_NO_L1: its 16-byte accesses bypass L1, which keeps
// the weight and bias every row reads again (H200, 16384 x 1024 bf16 layernorm, a warp per row: 21.3
// -> 19.6 us; but 2-5% slower on softmax and on long rows, so the search decides).
__device__ __forceinline__ void kd_load_tile_once(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE]) {
#if KD_NO_L1 && __CUDA_ARCH__ >= 800
  if (sizeof(kd_vec) == 16) {
    kd_load_tile_words(p, n, v, [](const kd_vec* a, unsigned (&w)[4]) {
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "l"(a));
    });
    return;
  }
#endif
  kd_load_tile(p, n, v);
}
#ifndef KD_L2HINT
#define KD_L2HINT (KD_SPLIT == 1)
#endif
// A row read twice from global memory: the first read asks the L2 to keep the lines (evict_last),
// the second marks them evict-first as it consumes them, so the rows in flight stay in L2 between
// the two reads while y streams past them.
__device__ __forceinline__ void kd_load_tile_keep(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE]) {
#if KD_L2HINT && __CUDA_ARCH__ >= 800
  if (sizeof(kd_vec) == 16) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    kd_load_tile_words(p, n, v, [policy](const kd_vec* a, unsigned (&w)[4]) {
      asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "l"(a), "l"(policy));
    });
    return;
  }
#endif
  kd_load_tile(p, n, v);
}
__device__ __forceinline__ void kd_load_tile_last(const kd_vec* p, int n, kd_vec (&v)[KD_CACHE]) {
#if KD_L2HINT
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) {
      v[i].w = __ldcs(&p[i * KD_ROW_THREADS].w);
    }
#else
  kd_load_tile(p, n, v);
#endif
}

// Calls f on each value of the first n of this thread's accesses in `v`, as f32.
template <typename F>
__device__ __forceinline__ void kd_tile_each(const kd_vec (&v)[KD_CACHE], int n, F f) {
#pragma unroll
  for (int i = 0; i < KD_CACHE; ++i)
    if (i < n) {
      float x[KD_VEC];
      kd_floats(v[i], x);
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) f(x[k]);
    }
}

// Folds the first n of this thread's accesses in `v` into its statistics `s`.
__device__ __forceinline__ void kd_tile_add(kd_stat& s, const kd_vec (&v)[KD_CACHE], int n, float shift) {
  if (n == 0) return;
#if KD_OP == 0
  (void)shift;
  float ss = 0.f;
  kd_tile_each(v, n, [&](float x) { ss = fmaf(x, x, ss); });
  s.ss += ss;
#elif KD_OP == 1
  // Two passes over registers: the tile's own mean, then squared deviations from it.
  float sum = 0.f;
  kd_tile_each(v, n, [&](float x) { sum += x - shift; });
  const float count = (float)(n * KD_VEC);
  const float mean = sum / count;
  float m2 = 0.f;
  kd_tile_each(v, n, [&](float x) {
    const float d = (x - shift) - mean;
    m2 = fmaf(d, d, m2);
  });
  s = kd_merge(s, kd_stat{count, mean, m2});
#else
  (void)shift;
  // Exponents relative to the running max, so the sum is rescaled (one more rounding) only when the
  // max grows, not once per tile.
  float m = s.max;
  kd_tile_each(v, n, [&](float x) { m = fmaxf(m, x); });
  // Nothing but -inf so far (a masked stretch) adds nothing; exp(-inf - -inf) would be a NaN.
  if (m == KD_NEG_INF) return;
  float sum = s.sum == 0.f ? 0.f : s.sum * expf(s.max - m);
  kd_tile_each(v, n, [&](float x) { sum += kd_exp(x - m); });
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
    kd_load_tile_keep(xr + base + t, n, v);
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
  if (one_tile) {
    kd_tile_each(v, kd_accesses(v0, v1, t), f);
    return;
  }
  for (long long base = v0; base < v1; base += KD_TILE) {
    const int n = kd_accesses(base, v1, t);
    kd_load_tile(src + base + t, n, v);
    kd_tile_each(v, n, f);
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
  // Squared deviations from the mean rounded once to f32: its rounding adds (its error)^2 per element,
  // an ulp of the mean squared, nothing against the deviations.
  const float mean = shift + center;
  kd_each_value(src, v0, v1, t, one_tile, v, [&](float x) {
    const float d = x - mean;
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
#if KD_OP == 1
  // The row's mean in f32, as the framework's kernel takes it: y = (x - mean) * scale, one rounding
  // of the mean (an ulp of it, far below the deviations' bits) and one of the difference.
  const float center = shift + nm.center;
#endif
  // One tile of y from the vectors at `base` (x again unless `held`).
  auto tile = [&](long long base) {
    const int n = kd_accesses(base, v1, t);
    const long long at = base + t;
    if (!held) kd_load_tile_last(xr + at, n, v);
#pragma unroll
    for (int i = 0; i < KD_CACHE; ++i) {
      if (i >= n) continue;
#if KD_HAS_W
      const kd_vec w = use_wb ? wb.w[i] : static_cast<const kd_vec*>(args.weight)[at + i * KD_ROW_THREADS];
#endif
#if KD_HAS_B
      const kd_vec b = use_wb ? wb.b[i] : static_cast<const kd_vec*>(args.bias)[at + i * KD_ROW_THREADS];
#endif
      float x[KD_VEC], y[KD_VEC];
      kd_floats(v[i], x);
#if KD_HAS_W
      float wf[KD_VEC];
      kd_floats(w, wf);
#endif
#if KD_HAS_B
      float bf[KD_VEC];
      kd_floats(b, bf);
#endif
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) {
#if KD_OP == 0
        y[k] = x[k] * nm.scale;
#elif KD_OP == 1
        y[k] = (x[k] - center) * nm.scale;
#elif KD_FOLD
        y[k] = kd_ex2(fmaf(x[k], KD_LOG2E, offset)) * nm.scale;
#else
        y[k] = kd_exp(x[k] - nm.center) * nm.scale;
#endif
#if KD_HAS_W && KD_HAS_B && KD_FOLD
        y[k] = fmaf(y[k], wf[k], bf[k]);
#else
#if KD_HAS_W
        y[k] *= wf[k];
#endif
#if KD_HAS_B
        y[k] += bf[k];
#endif
#endif
      }
      kd_vec out;
      kd_pack_floats(y, out);
      kd_store_streaming(yr + at + i * KD_ROW_THREADS, out);
    }
  };
  if (held) {
    tile(v0);  // the segment's only tile (an empty one in a dead row: no accesses)
  } else {
    for (long long base = v0; base < v1; base += KD_TILE) tile(base);
  }
}

// The shift layernorm's statistics are taken relative to: the row's first element.
__device__ __forceinline__ float kd_shift_of(const kd_vec* xr) {
#if KD_OP == 1
  return kd_first(xr[0]);
#else
  (void)xr;
  return 0.f;
#endif
}

// The ring's mbarriers and bulk copies (sm_90).
#include "bulk_copy.cuh"

// Asks the L2 for the whole 16-byte-aligned part of [p, p + bytes) (cp.async.bulk.prefetch, sm_90):
// one instruction of one lane fetches a row chunk ahead while its group still works on the row
// before, so DRAM streams through the group's reduce and write phases.
__device__ __forceinline__ void kd_prefetch_l2(const void* p, long long bytes) {
  const unsigned long long a = reinterpret_cast<unsigned long long>(p);
  const unsigned long long lo = (a + 15) & ~15ull, hi = (a + (unsigned long long)bytes) & ~15ull;
  if (hi > lo) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo), "r"((unsigned)(hi - lo)) : "memory");
}

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
#if KD_PREFETCH > 0
  // The group's chunk of the row KD_PREFETCH row steps ahead, asked of the L2 by one lane.
  auto prefetch = [&](long long row) {
    if (t == 0 && row < args.rows)
      kd_prefetch_l2(static_cast<const kd_vec*>(args.x) + row * nvec + c0, (c1 - c0) * (long long)sizeof(kd_vec));
  };
  for (int k = 1; k < KD_PREFETCH; ++k) prefetch(first + group + k * step);
#endif
  // Every group runs every iteration (a group past the last row with an empty segment), so the block
  // (and cluster) barriers are reached by all threads.
  for (long long row0 = first; row0 < args.rows; row0 += step) {
    const long long row = row0 + group;
    const bool live = row < args.rows;
#if KD_PREFETCH > 0
    prefetch(row + KD_PREFETCH * step);
#endif
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
      if (one_tile) {
        if (KD_STAGES > 0)
          kd_load_tile(src + v0 + t, kd_accesses(v0, v1, t), v);  // from the ring
        else
          kd_load_tile_once(src + v0 + t, kd_accesses(v0, v1, t), v);
      }
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
  if (held) kd_load_tile_once(xr + c.v0 + threadIdx.x, kd_accesses(c.v0, c.v1, threadIdx.x), v);
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
