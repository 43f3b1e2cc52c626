// The evaluator's own device code, compiled with NVRTC when an Evaluator starts: input generation,
// the fp64 reference, poisoning, guard-band and checksum checks, comparisons, the SM clock probe.
// Kept apart from candidate code: nothing here is a candidate, and nothing a candidate does can
// change it (it lives in its own module).
#include "eval/eval_kernels.hpp"

namespace kd::eval {

std::string_view eval_kernels_source() {
  return R"KD_EVAL(
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Element types by kd::DType's numbering: 0 f16, 1 bf16, 2 f32; 3 f64 (the reference).
__device__ __forceinline__ double kd_load(const void* p, long long i, int dt) {
  switch (dt) {
    case 0: return (double)__half2float(((const __half*)p)[i]);
    case 1: return (double)__bfloat162float(((const __nv_bfloat16*)p)[i]);
    case 2: return (double)((const float*)p)[i];
    default: return ((const double*)p)[i];
  }
}
__device__ __forceinline__ void kd_store(void* p, long long i, int dt, double v) {
  switch (dt) {
    case 0: ((__half*)p)[i] = __float2half_rn((float)v); break;
    case 1: ((__nv_bfloat16*)p)[i] = __float2bfloat16_rn((float)v); break;
    case 2: ((float*)p)[i] = (float)v; break;
    default: ((double*)p)[i] = v; break;
  }
}
// Raw bits of element i (2 or 4 bytes), for poison and sentinel comparisons.
__device__ __forceinline__ unsigned kd_bits(const void* p, long long i, int size) {
  return size == 2 ? (unsigned)((const unsigned short*)p)[i] : ((const unsigned*)p)[i];
}

__device__ __forceinline__ unsigned long long kd_mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ double kd_unit(unsigned long long h) {  // (0, 1)
  return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// A logical matrix of `rows` x `cols` (column-major, leading dimension ld, batch stride) inside a
// flat buffer. Batches with stride 0 alias; values hash the memory offset, so aliases agree.
struct KdMatrix {
  void* p;
  long long rows, cols, ld, stride;
  int batch;
  int dtype;
};

// dist: 0 normal, 1 uniform(-1,1), 2 normal (scaled by `scale`), 3 offset mean (1 + 0.5 normal),
// 4 large mean (1000 + 0.1 normal: where E[x^2] - E[x]^2 loses every significant bit in f32).
extern "C" __global__ void kd_generate(KdMatrix x, unsigned long long seed, int dist, double scale) {
  const long long per = x.rows * x.cols;
  const long long total = per * x.batch;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long z = e / per, r = e % per;
    const long long off = z * x.stride + (r / x.rows) * x.ld + (r % x.rows);
    const unsigned long long h1 = kd_mix(seed ^ kd_mix((unsigned long long)off));
    const unsigned long long h2 = kd_mix(h1 ^ 0x5851F42D4C957F2Dull);
    const double u1 = kd_unit(h1), u2 = kd_unit(h2);
    const double normal = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    double v;
    switch (dist) {
      case 1: v = 2.0 * u1 - 1.0; break;
      case 3: v = 1.0 + 0.5 * normal; break;
      case 4: v = 1000.0 + 0.1 * normal; break;
      default: v = normal; break;
    }
    kd_store(x.p, off, x.dtype, v * scale);
  }
}

// Every logical element of x set to all-ones bits: NaN in f32, f16 and bf16 alike.
extern "C" __global__ void kd_poison(KdMatrix x) {
  const long long per = x.rows * x.cols;
  const long long total = per * x.batch;
  const int size = x.dtype == 2 ? 4 : 2;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long z = e / per, r = e % per;
    const long long off = z * x.stride + (r / x.rows) * x.ld + (r % x.rows);
    if (size == 2) ((unsigned short*)x.p)[off] = 0xFFFFu; else ((unsigned*)x.p)[off] = 0xFFFFFFFFu;
  }
}

struct KdRefArgs {
  const void* a; const void* b; const void* c0; const void* bias; double* ref;
  long long m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c;
  int ta, tb, dt_a, dt_b, dt_c, has_bias;
  double alpha, beta;
};

// Stages a 16 (k) x 64 tile of op(A) (o: m) or op(B) (o: n) into S[k][o], zeros past o_n and k.
// k_contig: k is the operand's contiguous index (A with ta = T, B with tb = N); consecutive threads
// walk the contiguous index either way.
__device__ __forceinline__ void kd_ref_stage(double (&S)[16][65], const void* x, long long base, long long ld,
                                             int dt, bool k_contig, long long o0, long long o_n, long long k0,
                                             long long k, int tid) {
  for (int e = tid; e < 1024; e += 256) {
    const int oo = k_contig ? e / 16 : e % 64;
    const int kk = k_contig ? e % 16 : e / 64;
    const long long go = o0 + oo, gk = k0 + kk;
    double v = 0.0;
    if (go < o_n && gk < k) v = kd_load(x, base + (k_contig ? gk + go * ld : go + gk * ld), dt);
    S[kk][oo] = v;
  }
}

// ref[z*m*n + j*m + i] = alpha * sum_l op(A)[i,l] op(B)[l,j] + beta * C0[i,j] + bias[i], in fp64.
// Block 16x16 threads computes a 64x64 tile; each thread 4x4 outputs.
extern "C" __global__ void __launch_bounds__(256) kd_reference(KdRefArgs p) {
  __shared__ double As[16][65];
  __shared__ double Bs[16][65];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const long long i0 = (long long)blockIdx.x * 64, j0 = (long long)blockIdx.y * 64;
  const long long z = blockIdx.z;
  const long long a_base = z * p.stride_a, b_base = z * p.stride_b;
  double acc[4][4];
  for (int r = 0; r < 4; ++r) for (int c = 0; c < 4; ++c) acc[r][c] = 0.0;
  for (long long k0 = 0; k0 < p.k; k0 += 16) {
    kd_ref_stage(As, p.a, a_base, p.lda, p.dt_a, p.ta != 0, i0, p.m, k0, p.k, tid);
    kd_ref_stage(Bs, p.b, b_base, p.ldb, p.dt_b, p.tb == 0, j0, p.n, k0, p.k, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      double av[4], bv[4];
      for (int r = 0; r < 4; ++r) av[r] = As[kk][tx + 16 * r];
      for (int c = 0; c < 4; ++c) bv[c] = Bs[kk][ty + 16 * c];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = fma(av[r], bv[c], acc[r][c]);
    }
    __syncthreads();
  }
  for (int r = 0; r < 4; ++r) {
    const long long i = i0 + tx + 16 * r;
    if (i >= p.m) continue;
    for (int c = 0; c < 4; ++c) {
      const long long j = j0 + ty + 16 * c;
      if (j >= p.n) continue;
      double v = p.alpha * acc[r][c];
      if (p.beta != 0.0) v += p.beta * kd_load(p.c0, z * p.stride_c + i + j * p.ldc, p.dt_c);
      if (p.has_bias) v += kd_load(p.bias, i, p.dt_c);
      p.ref[z * p.m * p.n + j * p.m + i] = v;
    }
  }
}

// Block-wide sums and maxima folded into global accumulators: one atomic per warp.
__device__ __forceinline__ double kd_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
  return v;
}
__device__ __forceinline__ double kd_warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_down_sync(0xFFFFFFFFu, v, o));
  return v;
}
__device__ __forceinline__ unsigned long long kd_warp_sum_u(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
  return v;
}
// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a float max.
__device__ __forceinline__ void kd_atomic_max(double* dst, double v) {
  atomicMax((unsigned long long*)dst, (unsigned long long)__double_as_longlong(v));
}

struct KdRefStats { double sum_sq; double max_abs; };

extern "C" __global__ void kd_ref_stats(const double* ref, long long count, KdRefStats* out) {
  double s = 0.0, mx = 0.0;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count;
       e += (long long)gridDim.x * blockDim.x) {
    const double v = ref[e];
    s += v * v;
    mx = fmax(mx, fabs(v));
  }
  s = kd_warp_sum(s);
  mx = kd_warp_max(mx);
  if ((threadIdx.x & 31) == 0) { atomicAdd(&out->sum_sq, s); kd_atomic_max(&out->max_abs, mx); }
}

struct KdCompareStats {
  unsigned long long poisoned;   // still all-ones bits: never written
  unsigned long long nonfinite;  // NaN/Inf where the reference is finite
  double max_rel;                // max |out - ref| / max(|ref|, floor)
  double sum_sq_err;             // for ||out - ref|| / ||ref||
  double signed_err;             // sum (out - ref) sgn(ref): the error's lean away from zero
  double sum_abs_ref;            // sum |ref| over the elements compared with the reference
};

// Compares the logical elements of `out` with `ref` (fp64, compact) or, when `other` is given,
// with that second output of the same layout (the agreement check between two runs; two
// identical bit patterns, NaN included, agree).
extern "C" __global__ void kd_compare(KdMatrix out, const double* ref, const void* other,
                                      double floor, KdCompareStats* st) {
  const long long per = out.rows * out.cols;
  const long long total = per * out.batch;
  const int size = out.dtype == 2 ? 4 : 2;
  const unsigned poison = size == 2 ? 0xFFFFu : 0xFFFFFFFFu;
  unsigned long long poisoned = 0, nonfinite = 0;
  double worst = 0.0, sq = 0.0, lean = 0.0, mass = 0.0;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long z = e / per, r = e % per;
    const long long off = z * out.stride + (r / out.rows) * out.ld + (r % out.rows);
    const double rv = ref[e];
    const unsigned bits = kd_bits(out.p, off, size);
    double err;
    if (other != nullptr) {
      const unsigned obits = kd_bits(other, off, size);
      if (bits == obits) continue;
      const double a = kd_load(out.p, off, out.dtype), b = kd_load(other, off, out.dtype);
      err = (isfinite(a) && isfinite(b)) ? fabs(a - b) : __longlong_as_double(0x7FF0000000000000ll);
      if (!isfinite(err)) ++nonfinite;
    } else {
      if (bits == poison) { ++poisoned; continue; }
      const double v = kd_load(out.p, off, out.dtype);
      if (!isfinite(v)) { if (isfinite(rv)) ++nonfinite; continue; }
      err = fabs(v - rv);
      lean += rv > 0.0 ? v - rv : (rv < 0.0 ? rv - v : 0.0);
      mass += fabs(rv);
    }
    if (isfinite(err)) sq += err * err;
    const double rel = isfinite(err) ? err / fmax(fabs(rv), floor) : 1e300;
    if (rel > worst) worst = rel;
  }
  poisoned = kd_warp_sum_u(poisoned);
  nonfinite = kd_warp_sum_u(nonfinite);
  sq = kd_warp_sum(sq);
  worst = kd_warp_max(worst);
  lean = kd_warp_sum(lean);
  mass = kd_warp_sum(mass);
  if ((threadIdx.x & 31) == 0) {
    if (lean != 0.0) atomicAdd(&st->signed_err, lean);
    if (mass != 0.0) atomicAdd(&st->sum_abs_ref, mass);
    if (poisoned) atomicAdd(&st->poisoned, poisoned);
    if (nonfinite) atomicAdd(&st->nonfinite, nonfinite);
    if (sq != 0.0) atomicAdd(&st->sum_sq_err, sq);
    kd_atomic_max(&st->max_rel, worst);
  }
}

struct KdGuardStats {
  unsigned long long before, after, padding;  // elements that lost the sentinel
};

// A guarded allocation: [guard][body][guard], guard and body multiples of 256 bytes, all filled
// with the sentinel byte 0xA5 except the logical elements of `body` (x.p points at the body).
// Counts sentinel elements that changed. With x.rows == 0 the body is free (a workspace).
extern "C" __global__ void kd_check_guards(KdMatrix x, long long guard_bytes, long long body_bytes,
                                           KdGuardStats* st) {
  const int size = x.dtype == 2 ? 4 : 2;
  const unsigned sentinel = size == 2 ? 0xA5A5u : 0xA5A5A5A5u;
  const long long guard_el = guard_bytes / size, body_el = body_bytes / size;
  const long long total = 2 * guard_el + body_el;
  const char* base = (const char*)x.p - guard_bytes;
  const long long stride = x.batch > 1 ? x.stride : x.ld * x.cols;
  unsigned long long before = 0, after = 0, padding = 0;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const unsigned bits = kd_bits(base, e, size);
    if (e < guard_el) { before += bits != sentinel; continue; }
    if (e >= guard_el + body_el) { after += bits != sentinel; continue; }
    if (x.rows == 0) continue;
    const long long b = e - guard_el;
    const long long z = stride > 0 ? b / stride : 0, r = stride > 0 ? b % stride : b;
    const long long col = r / x.ld, row = r % x.ld;
    const bool logical = z < x.batch && col < x.cols && row < x.rows;
    if (!logical) padding += bits != sentinel;
  }
  before = kd_warp_sum_u(before);
  after = kd_warp_sum_u(after);
  padding = kd_warp_sum_u(padding);
  if ((threadIdx.x & 31) == 0) {
    if (before) atomicAdd(&st->before, before);
    if (after) atomicAdd(&st->after, after);
    if (padding) atomicAdd(&st->padding, padding);
  }
}

// Position-sensitive 64-bit checksum of `words` 32-bit words (sum of word * hash(index)).
extern "C" __global__ void kd_checksum(const unsigned* p, long long words, unsigned long long* out) {
  unsigned long long s = 0;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < words;
       e += (long long)gridDim.x * blockDim.x)
    s += ((unsigned long long)p[e] + 1ull) * (kd_mix((unsigned long long)e) | 1ull);
  s = kd_warp_sum_u(s);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

// The gate's producer for a plan whose first launch is a programmatic dependent (design.md's
// contract, gemm.cuh): it lets its dependents start at once, waits `delay_ns`, then writes the
// candidate's inputs (each range copied from its stash). A dependent that reads before its
// griddepcontrol.wait sees the poison left in the inputs instead.
struct KdCopy {
  const unsigned char* src;
  unsigned char* dst;
  long long bytes;
};
struct KdLateCopies {
  KdCopy c[4];
  int count;
  long long delay_ns;
};
extern "C" __global__ void kd_late_copy(KdLateCopies p) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < p.delay_ns);
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (int i = 0; i < p.count; ++i) {
    const KdCopy c = p.c[i];
    long long done = 0;
    if ((((unsigned long long)c.src | (unsigned long long)c.dst) & 15ull) == 0) {
      const long long vecs = c.bytes / 16;
      for (long long e = tid; e < vecs; e += step)
        ((uint4*)c.dst)[e] = ((const uint4*)c.src)[e];
      done = vecs * 16;
    }
    for (long long e = done + tid; e < c.bytes; e += step) c.dst[e] = c.src[e];
  }
}

// A streaming read of two ranges in one launch (a call's weight and its other operand, each
// 16-byte aligned, a multiple of 16 bytes) with four 16-byte loads in flight per thread: the
// bandwidth a kernel that only streams its inputs reaches. The xor lands in `sink` only when it is
// a value no real data produces, so the loads cannot be dropped.
__device__ __forceinline__ unsigned kd_stream_range(const uint4* p, long long vecs, long long tid, long long step) {
  unsigned x = 0;
  long long e = tid;
  for (; e + 3 * step < vecs; e += 4 * step) {
    const uint4 v0 = __ldcs(p + e), v1 = __ldcs(p + e + step), v2 = __ldcs(p + e + 2 * step),
                v3 = __ldcs(p + e + 3 * step);
    x ^= v0.x ^ v0.y ^ v0.z ^ v0.w ^ v1.x ^ v1.y ^ v1.z ^ v1.w ^ v2.x ^ v2.y ^ v2.z ^ v2.w ^ v3.x ^ v3.y ^
         v3.z ^ v3.w;
  }
  for (; e < vecs; e += step) {
    const uint4 v = __ldcs(p + e);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  return x;
}
extern "C" __global__ void __launch_bounds__(256) kd_stream_read(const uint4* p0, long long vecs0, const uint4* p1,
                                                                 long long vecs1, unsigned long long* sink) {
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  const unsigned x = kd_stream_range(p0, vecs0, tid, step) ^ kd_stream_range(p1, vecs1, tid, step);
  if (x == 0x9E3779B9u && tid == 0x7fffffff) *sink = x;
}

// Row operators (libdispatch/include/kdispatch/rowop.cuh): `rows` contiguous rows of `cols`.
// op: 0 rmsnorm, 1 layernorm, 2 softmax.
struct KdRowArgs {
  const void* x; const void* w; const void* b; void* y; double* ref;
  long long rows, cols;
  int op, dtype, has_w, has_b;
  double eps;
};

// Block-wide (blockDim.x == 256) sum and max, every thread gets the result.
template <class T>
__device__ __forceinline__ T kd_block_sum(T v, T* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  T t = 0;
  for (int i = 0; i < 8; ++i) t += sh[i];
  return t;
}
template <class T>
__device__ __forceinline__ T kd_block_max(T v, T* sh) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  T t = sh[0];
  for (int i = 1; i < 8; ++i) t = max(t, sh[i]);
  return t;
}

// The fp64 reference: a block per row (grid-stride), two passes for the mean and the variance.
extern "C" __global__ void __launch_bounds__(256) kd_row_reference(KdRowArgs p) {
  __shared__ double sh[8];
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long base = r * p.cols;
    double a = 0.0;
    if (p.op == 2) {
      a = -1e308;
      for (long long c = threadIdx.x; c < p.cols; c += 256) a = fmax(a, kd_load(p.x, base + c, p.dtype));
      a = kd_block_max(a, sh);
    } else {
      for (long long c = threadIdx.x; c < p.cols; c += 256) {
        const double v = kd_load(p.x, base + c, p.dtype);
        a += p.op == 0 ? v * v : v;
      }
      a = kd_block_sum(a, sh) / (double)p.cols;
    }
    double second = 0.0;
    for (long long c = threadIdx.x; c < p.cols; c += 256) {
      const double v = kd_load(p.x, base + c, p.dtype);
      if (p.op == 1) second += (v - a) * (v - a);
      if (p.op == 2) second += exp(v - a);
    }
    if (p.op != 0) second = kd_block_sum(second, sh);
    const double scale = p.op == 0 ? 1.0 / sqrt(a + p.eps)
                       : p.op == 1 ? 1.0 / sqrt(second / (double)p.cols + p.eps) : 1.0 / second;
    for (long long c = threadIdx.x; c < p.cols; c += 256) {
      const double v = kd_load(p.x, base + c, p.dtype);
      double y;
      if (p.op == 0) y = v * scale;
      else if (p.op == 1) y = (v - a) * scale;
      else y = exp(v - a) * scale;
      if (p.op != 2 && p.has_w) y *= kd_load(p.w, c, p.dtype);
      if (p.op == 1 && p.has_b) y += kd_load(p.b, c, p.dtype);
      p.ref[base + c] = y;
    }
  }
}

// The baseline until the framework's own kernel can be timed beside a candidate (issue 33): what a
// framework's row kernel computes, in f32 as they do (a block per row, Welford for the layernorm
// statistics merged with Chan's formula, the max before the exponentials), written to y in the
// key's dtype. Its error sets the gate's allowance; its time is the baseline's.
__device__ __forceinline__ void kd_welford_merge(float& n, float& mean, float& m2, float n2, float mean2, float m22) {
  if (n2 == 0.f) return;
  const float nn = n + n2, d = mean2 - mean;
  mean += d * (n2 / nn);
  m2 += m22 + d * d * (n * n2 / nn);
  n = nn;
}
extern "C" __global__ void __launch_bounds__(256) kd_row_baseline(KdRowArgs p) {
  __shared__ float sh[8];
  __shared__ float wn[8], wmean[8], wm2[8];
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long base = r * p.cols;
    float a = 0.f, scale = 1.f;
    if (p.op == 1) {
      float n = 0.f, mean = 0.f, m2 = 0.f;
      for (long long c = threadIdx.x; c < p.cols; c += 256) {
        const float v = (float)kd_load(p.x, base + c, p.dtype);
        n += 1.f;
        const float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
      }
      for (int o = 16; o > 0; o >>= 1)
        kd_welford_merge(n, mean, m2, __shfl_xor_sync(0xFFFFFFFFu, n, o), __shfl_xor_sync(0xFFFFFFFFu, mean, o),
                         __shfl_xor_sync(0xFFFFFFFFu, m2, o));
      __syncthreads();
      if ((threadIdx.x & 31) == 0) { wn[threadIdx.x >> 5] = n; wmean[threadIdx.x >> 5] = mean; wm2[threadIdx.x >> 5] = m2; }
      __syncthreads();
      n = wn[0]; mean = wmean[0]; m2 = wm2[0];
      for (int i = 1; i < 8; ++i) kd_welford_merge(n, mean, m2, wn[i], wmean[i], wm2[i]);
      a = mean;
      scale = rsqrtf(m2 / (float)p.cols + (float)p.eps);
    } else if (p.op == 0) {
      float s = 0.f;
      for (long long c = threadIdx.x; c < p.cols; c += 256) {
        const float v = (float)kd_load(p.x, base + c, p.dtype);
        s += v * v;
      }
      scale = rsqrtf(kd_block_sum(s, sh) / (float)p.cols + (float)p.eps);
    } else {
      float m = -__int_as_float(0x7f800000);
      for (long long c = threadIdx.x; c < p.cols; c += 256) m = fmaxf(m, (float)kd_load(p.x, base + c, p.dtype));
      a = kd_block_max(m, sh);
      float s = 0.f;
      for (long long c = threadIdx.x; c < p.cols; c += 256) s += expf((float)kd_load(p.x, base + c, p.dtype) - a);
      scale = 1.f / kd_block_sum(s, sh);
    }
    for (long long c = threadIdx.x; c < p.cols; c += 256) {
      const float v = (float)kd_load(p.x, base + c, p.dtype);
      float y;
      if (p.op == 0) y = v * scale;
      else if (p.op == 1) y = (v - a) * scale;
      else y = expf(v - a) * scale;
      if (p.op != 2 && p.has_w) y *= (float)kd_load(p.w, c, p.dtype);
      if (p.op == 1 && p.has_b) y += (float)kd_load(p.b, c, p.dtype);
      kd_store(p.y, base + c, p.dtype, (double)y);
    }
    __syncthreads();
  }
}

// The SM clock as observed: clock64 ticks over a globaltimer interval of about 200 us.
extern "C" __global__ void kd_clock_probe(unsigned long long* out) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); } while (t1 - t0 < 200000ull);
  const long long c1 = clock64();
  out[0] = (unsigned long long)(c1 - c0);
  out[1] = t1 - t0;
}
)KD_EVAL";
}

}  // namespace kd::eval
