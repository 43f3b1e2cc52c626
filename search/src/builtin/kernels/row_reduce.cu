// Family row_reduce: rmsnorm, layernorm (forward, optional affine weight and bias) and softmax over
// the last dimension (<kdispatch/rowop.cuh>), f16/bf16/f32 data, f32 arithmetic.
//  - a row group of KD_ROW_THREADS threads (a warp .. the whole block) owns one row; a block holds
//    KD_THREADS / KD_ROW_THREADS groups and grid-strides over rows;
//  - each thread moves KD_VEC elements per access and holds KD_CACHE accesses in registers: a row of
//    at most KD_ROW_THREADS * KD_VEC * KD_CACHE elements is read once, a longer one twice (statistics,
//    then y);
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
// Plan: KD_SPLIT == 1: kd_row_main, grid [<= ceil(rows / rows per block)], block [KD_THREADS].
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

#if KD_THREADS % KD_ROW_THREADS != 0 || (KD_ROW_THREADS % 32 != 0 && 32 % KD_ROW_THREADS != 0)
#error "KD_ROW_THREADS must divide KD_THREADS and be a multiple or a divisor of 32"
#endif
// A group narrower than a warp (short rows: more rows, and more loads in flight per thread) reduces
// within its own aligned lanes: the butterfly starts at half its width.
#define KD_FIRST_MASK (KD_ROW_THREADS >= 32 ? 16 : KD_ROW_THREADS / 2)
#if KD_SPLIT > 1 && KD_ROW_THREADS != KD_THREADS
#error "a split row takes whole blocks"
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
      for (int k = 0; k < KD_VEC; ++k) sum += expf(kd_f(v[i].e[k]) - m);
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

// The merge of a warp's 32 statistics (of a sub-warp group's, when the group is narrower), in every
// lane (the merge is symmetric).
__device__ __forceinline__ kd_stat kd_warp_reduce(kd_stat s) {
#pragma unroll
  for (int mask = KD_FIRST_MASK; mask >= 1; mask >>= 1) s = kd_merge(s, kd_shfl(s, mask));
  return s;
}

// The statistics of a whole row group, the same in every thread of it. All threads of the block call
// it together (it may hold block barriers); `red` is shared, one slot per warp.
__device__ __forceinline__ kd_stat kd_row_reduce(kd_stat s, kd_stat* red) {
  s = kd_warp_reduce(s);
#if KD_WARPS_PER_ROW > 1
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = warp - warp % KD_WARPS_PER_ROW;
  if (lane == 0) red[warp] = s;
  __syncthreads();
  // Every warp of the group merges the group's partials in a butterfly of its own: the same inputs in
  // the same lanes give every warp the same result, in log2(32) steps instead of one per warp.
  s = kd_warp_reduce(lane < KD_WARPS_PER_ROW ? red[first + lane] : kd_none());
  __syncthreads();  // the slots are written again by the next reduction
#endif
  return s;
}

// What y needs from the row's statistics: rmsnorm y = x * scale; layernorm y = ((x - shift) - center)
// * scale, exact in x - shift where x is near the shift; softmax y = exp(x - center) / scale.
struct kd_norm {
  float center, scale;
};
__device__ __forceinline__ kd_norm kd_norm_of(kd_stat s, const kd_row_args& args) {
#if KD_OP == 0
  return {0.f, rsqrtf(s.ss / (float)args.cols + args.eps)};
#elif KD_OP == 1
  return {s.mean, rsqrtf(s.m2 / (float)args.cols + args.eps)};
#else
  return {s.max, s.sum};
#endif
}

// Writes y for vectors [v0, v1) of the row, reading x again unless `held` (v holds the segment's
// only tile).
__device__ __forceinline__ void kd_segment_write(const kd_row_args& args, const kd_vec* xr, kd_vec* yr, long long v0,
                                                 long long v1, int t, kd_stat s, float shift, bool held,
                                                 kd_vec (&v)[KD_CACHE]) {
  const kd_norm nm = kd_norm_of(s, args);
#if KD_OP != 1
  (void)shift;
#endif
  for (long long base = v0; base < v1; base += KD_TILE) {
    const int n = kd_accesses(base, v1, t);
    const long long at = base + t;
    if (!held) kd_load_tile(xr + at, n, v);
#pragma unroll
    for (int i = 0; i < KD_CACHE; ++i) {
      if (i >= n) continue;
#if KD_HAS_W
      const kd_vec w = static_cast<const kd_vec*>(args.weight)[at + i * KD_ROW_THREADS];
#endif
#if KD_HAS_B
      const kd_vec b = static_cast<const kd_vec*>(args.bias)[at + i * KD_ROW_THREADS];
#endif
      kd_vec out;
#pragma unroll
      for (int k = 0; k < KD_VEC; ++k) {
        const float x = kd_f(v[i].e[k]);
#if KD_OP == 0
        float y = x * nm.scale;
#elif KD_OP == 1
        float y = ((x - shift) - nm.center) * nm.scale;
#else
        float y = expf(x - nm.center) / nm.scale;
#endif
#if KD_HAS_W
        y *= kd_f(w.e[k]);
#endif
#if KD_HAS_B
        y += kd_f(b.e[k]);
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

#if KD_SPLIT == 1

extern "C" __global__ void __launch_bounds__(KD_THREADS, KD_MIN_BLOCKS) kd_row_main(kd_row_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  __shared__ kd_stat red[KD_THREADS / 32];
  const int t = threadIdx.x % KD_ROW_THREADS;
  const int group = threadIdx.x / KD_ROW_THREADS;
  const long long nvec = args.cols / KD_VEC;
  const long long step = (long long)gridDim.x * KD_ROWS_PER_BLOCK;
  // Every group runs every iteration (a group past the last row with an empty segment), so the block
  // barriers of kd_row_reduce are reached by all threads.
  for (long long row0 = (long long)blockIdx.x * KD_ROWS_PER_BLOCK; row0 < args.rows; row0 += step) {
    const long long row = row0 + group;
    const bool live = row < args.rows;
    const long long at = (live ? row : 0) * nvec;
    const kd_vec* xr = static_cast<const kd_vec*>(args.x) + at;
    kd_vec* yr = static_cast<kd_vec*>(args.y) + at;
    const long long v1 = live ? nvec : 0;
    const float shift = kd_shift_of(xr);
    kd_vec v[KD_CACHE];
    kd_stat s = kd_segment_stat(xr, 0, v1, t, shift, v);
    s = kd_row_reduce(s, red);
    kd_segment_write(args, xr, yr, 0, v1, t, s, shift, v1 <= KD_TILE, v);
  }
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
  kd_segment_write(args, xr, static_cast<kd_vec*>(args.y) + row * nvec, c.v0, c.v1, threadIdx.x, s, shift, held, v);
}

#endif
