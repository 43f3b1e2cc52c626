// wg_tiled's operand policies: how a k tile in the ring becomes products. One of them is the
// configuration's kd_ops (wg_tiled.cu), each with the same hooks:
//   mma_tile(i, P)  issue k tile i's wgmmas (one commit group); P: its place in its promotion group
//   split_tile(i)   f32: split B's k tile i in shared memory into the TF32 hi and lo parts
//   promote()       f32: wait for the wgmmas and add their sum to the f32 accumulators
//   forget()        f32: drop the sum of the wgmmas (stream-K, after a segment's promotion)
//   finish(...)     before the epilogue: KD_F16S's column scales
// The policies: 16-bit A and B straight from shared memory (kd_ops_16bit); f32 as error-compensated
// TF32 or plain TF32 (kd_ops_tf32; KD_3XTF32), B's lo parts split in shared memory or, KD_BLO, by a
// first launch; f32 as f16 splits (kd_ops_f16s, KD_F16S) from B's halves written by a first launch.
// Part of wg_tiled.cu's translation unit (embedded, and expanded in place like wg_common.cuh).

// Round to TF32 to nearest (ties away), as tc_tiled: two integer ops for finite values; NaN
// propagates through the lo part.
__device__ __forceinline__ unsigned kd_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
// The same rounding for an operand that only wgmma reads: wgmma reads TF32 operands truncated (B's
// hi below relies on it), so half a TF32 ulp added is the whole rounding and the mask can be left to
// it; one op per element fewer on the consumers' and the producer's paths.
__device__ __forceinline__ unsigned kd_tf32_w(float x) { return __float_as_uint(x) + 0x1000u; }
// B's lo part for 3xTF32: B's hi is the raw value, which wgmma reads truncated to TF32; lo is the
// exact rest, rounded to TF32 (as wgmma reads it).
__device__ __forceinline__ float kd_lo_b(float x) {
  return __uint_as_float(kd_tf32_w(x - __uint_as_float(__float_as_uint(x) & 0xffffe000u)));
}

// B's parts that a first launch writes into the workspace after the partial tiles
// (wg_tiled_layout.cuh): KD_F16S's hi|lo halves per k tile (64 halves, one 128-byte row), then 1 / s
// per column; KD_BLO's lo parts, [batch][n][kd_wg_blo_ld(k)] floats.
__device__ __forceinline__ float* kd_b16(const kd_gemm_args& args) {
  return static_cast<float*>(args.workspace) + kd_wg_b16_offset(kd_layout().parts(), args.batch, args.m, args.n);
}
__device__ __forceinline__ float* kd_inv16(const kd_gemm_args& args) {
  return kd_b16(args) + args.batch * args.n * kd_wg_ld16(args.k);
}
__device__ __forceinline__ float* kd_blo(const kd_gemm_args& args) {
  return static_cast<float*>(args.workspace) + kd_wg_blo_offset(kd_layout().parts(), args.batch, args.m, args.n);
}

// The scale that puts a max of biased exponent e in [2^14, 2^15), clamped so s and 1 / s are normal.
__device__ __forceinline__ void kd_f16_scale(unsigned maxbits, float& s, float& inv) {
  int sb = 268 - static_cast<int>(maxbits >> 23);
  sb = sb > 253 ? 253 : (sb < 1 ? 1 : sb);
  s = __uint_as_float(static_cast<unsigned>(sb) << 23);
  inv = __uint_as_float(static_cast<unsigned>(254 - sb) << 23);
}
// A pair of scaled values as packed f16 pairs (x in the low half): hi rounded to nearest, and lo the
// rest (exact in f32) rounded to nearest. A's fragments and B's halves are split alike.
__device__ __forceinline__ void kd_split_f16x2(float x, float y, unsigned& hi, unsigned& lo) {
  const __half2 h = __floats2half2_rn(x, y);
  const float2 hf = __half22float2(h);
  const __half2 l = __floats2half2_rn(x - hf.x, y - hf.y);
  hi = *reinterpret_cast<const unsigned*>(&h);
  lo = *reinterpret_cast<const unsigned*>(&l);
}
#if KD_F16S && !KD_TB
// Launch 0 of a KD_F16S plan, one block per column of B (batch * n blocks): the column's max, then its
// hi|lo halves and 1 / s. kd_wg_tiled runs as its programmatic dependent and waits on the grid
// before its first copy.
extern "C" __global__ void __launch_bounds__(256) kd_wg_split_b16(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ unsigned warp_max[8];
  const long long n = args.n, k = args.k, ld16 = kd_wg_ld16(k);
  const long long col = blockIdx.x;
  const long long z = col / n, c = col % n;
  const float* Bc = static_cast<const float*>(args.b) + z * args.stride_b + c * args.ldb;
  // Rows of B are 16-byte aligned (ldb a multiple of 4 floats); the last partial float4 by halves.
  auto load4 = [&](long long kk) {
    if (kk + 4 <= k) return *reinterpret_cast<const float4*>(Bc + kk);
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (kk < k) v.x = Bc[kk];
    if (kk + 1 < k) v.y = Bc[kk + 1];
    if (kk + 2 < k) v.z = Bc[kk + 2];
    return v;
  };
  // Columns of up to kHeld * 1024 k are read once, into registers; longer ones twice (the max, then
  // the split).
  constexpr int kHeld = 4;
  const bool held = ld16 <= kHeld * 1024;
  float4 h[kHeld];
  unsigned mx = 0;
  auto fold = [&](const float4& v) {
    mx = max(max(mx, __float_as_uint(v.x) & 0x7fffffffu), __float_as_uint(v.y) & 0x7fffffffu);
    mx = max(max(mx, __float_as_uint(v.z) & 0x7fffffffu), __float_as_uint(v.w) & 0x7fffffffu);
  };
  if (held) {
#pragma unroll
    for (int q = 0; q < kHeld; ++q) {
      const long long kk = 4 * threadIdx.x + 1024LL * q;
      h[q] = kk < ld16 ? load4(kk) : make_float4(0.f, 0.f, 0.f, 0.f);
      fold(h[q]);
    }
  } else {
    for (long long kk = 4 * threadIdx.x; kk < k; kk += 1024) fold(load4(kk));
  }
  for (int o = 16; o; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = warp_max[0];
  for (int w = 1; w < 8; ++w) mx = max(mx, warp_max[w]);
  float s, inv;
  kd_f16_scale(mx, s, inv);
  __half* out = reinterpret_cast<__half*>(kd_b16(args) + col * ld16);
  auto split = [&](long long kk, const float4& v) {
    uint2 hi, lo;
    kd_split_f16x2(v.x * s, v.y * s, hi.x, lo.x);
    kd_split_f16x2(v.z * s, v.w * s, hi.y, lo.y);
    __half* o = out + (kk >> 5) * 64 + (kk & 31);
    *reinterpret_cast<uint2*>(o) = hi;
    *reinterpret_cast<uint2*>(o + 32) = lo;
  };
  if (held) {
#pragma unroll
    for (int q = 0; q < kHeld; ++q) {
      const long long kk = 4 * threadIdx.x + 1024LL * q;
      if (kk < ld16) split(kk, h[q]);
    }
  } else {
    for (long long kk = 4 * threadIdx.x; kk < ld16; kk += 1024) split(kk, load4(kk));
  }
  if (threadIdx.x == 0) kd_inv16(args)[col] = inv;
}
#endif

#if KD_F16S && KD_TB
// Launch 0 of a KD_F16S plan with tb = T: B is n x k with n contiguous, so a column of op(B) is a strided
// row of B. The same halves and scales as above, from batch * ceil(n / 32) blocks of 512 threads: lane l
// of every warp holds column c0 + l, and warp w takes k tiles w, w + 16, ..., so each of its loads
// reads 32 neighbouring columns (128 bytes) of one k row. A first pass gives each column's max (over
// the warps through shared memory), a second splits the 32 values of each of the warp's k tiles that
// a lane holds and writes them as the column's 128-byte row of halves. ldb and the batch stride need no
// alignment: B is read a float at a time.
extern "C" __global__ void __launch_bounds__(512) kd_wg_split_b16(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  constexpr int kWarps = 16;
  __shared__ unsigned warp_max[kWarps][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const long long n = args.n, k = args.k, ld16 = kd_wg_ld16(k), ldb = args.ldb, ktiles = ld16 / 32;
  const long long groups = (n + 31) / 32;
  const long long z = blockIdx.x / groups, c = blockIdx.x % groups * 32 + lane;
  const bool in = c < n;
  const float* Bc = static_cast<const float*>(args.b) + z * args.stride_b + (in ? c : 0);
  // The 32 k of tile kt in column c (zero past k and past n).
  auto load_tile = [&](long long kt, float (&v)[32]) {
    const long long k0 = kt * 32;
    const float* src = Bc + k0 * ldb;
#pragma unroll
    for (int r = 0; r < 32; ++r) v[r] = in && k0 + r < k ? src[r * ldb] : 0.f;
  };
  unsigned mx = 0;
  for (long long kt = w; kt < ktiles; kt += kWarps) {
    float v[32];
    load_tile(kt, v);
#pragma unroll
    for (int r = 0; r < 32; ++r) mx = max(mx, __float_as_uint(v[r]) & 0x7fffffffu);
  }
  warp_max[w][lane] = mx;
  __syncthreads();
  mx = warp_max[0][lane];
  for (int i = 1; i < kWarps; ++i) mx = max(mx, warp_max[i][lane]);
  float s, inv;
  kd_f16_scale(mx, s, inv);
  if (!in) return;
  if (w == 0) kd_inv16(args)[z * n + c] = inv;
  uint4* out = reinterpret_cast<uint4*>(kd_b16(args) + (z * n + c) * ld16);
  for (long long kt = w; kt < ktiles; kt += kWarps) {
    float v[32];
    load_tile(kt, v);
    unsigned hi[16], lo[16];
#pragma unroll
    for (int q = 0; q < 16; ++q) kd_split_f16x2(v[2 * q] * s, v[2 * q + 1] * s, hi[q], lo[q]);
    // The tile's row: 32 hi halves, then 32 lo halves (8 uint4 of 8 halves).
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      out[kt * 8 + q] = make_uint4(hi[4 * q], hi[4 * q + 1], hi[4 * q + 2], hi[4 * q + 3]);
      out[kt * 8 + 4 + q] = make_uint4(lo[4 * q], lo[4 * q + 1], lo[4 * q + 2], lo[4 * q + 3]);
    }
  }
}
#endif

#if KD_BLO
// Launch 0 of a KD_BLO plan: B's lo parts, once per call instead of once per CTA and k tile.
// kd_wg_tiled runs as its programmatic dependent and waits on the grid before its first copy of a lo
// tile; its blocks may become resident once every block here started.
extern "C" __global__ void __launch_bounds__(256) kd_wg_split_b(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long k = args.k, ldl = kd_wg_blo_ld(k), per = args.n * ldl, total = per * args.batch;
  const float* B = static_cast<const float*>(args.b);
  float* L = kd_blo(args);
  const bool vec = k % 4 == 0 && args.ldb % 4 == 0 && args.stride_b % 4 == 0;
  for (long long q = blockIdx.x * 256LL + threadIdx.x; 4 * q < total; q += 256LL * gridDim.x) {
    const long long idx = 4 * q, z = idx / per, rem = idx % per, col = rem / ldl, kk = rem % ldl;
    const float* src = B + z * args.stride_b + col * args.ldb + kk;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (vec) {
      v = *reinterpret_cast<const float4*>(src);
    } else {
      if (kk < k) v.x = src[0];
      if (kk + 1 < k) v.y = src[1];
      if (kk + 2 < k) v.z = src[2];
      if (kk + 3 < k) v.w = src[3];
    }
    *reinterpret_cast<float4*>(L + idx) = make_float4(kd_lo_b(v.x), kd_lo_b(v.y), kd_lo_b(v.z), kd_lo_b(v.w));
  }
}
#endif

// The wgmma wrappers (kd_wgmma<T>, kd_wgmma_tf32, kd_wgmma_f16r), written by tools/dev/gen_wgmma.py
// into the build tree and embedded with the kernels.
#include "wg_wgmma.cuh"
#include "wg_stage16.cuh"

// f32: splits B's k tile at `hi` (raw values, 128-byte swizzled rows) into TF32 hi (in place) and
// lo (at the same offsets from `lo`). The split is elementwise, so the swizzle does not matter.
__device__ __forceinline__ void kd_split_b(float4* hi, float4* lo) {
  constexpr int kIters = KD_BN * 8 / kLoaders, kBatch = kIters < 4 ? kIters : 4;
  // Loads in batches of 4 before their stores: the compiler cannot tell hi from lo, and interleaved
  // they would run one shared-memory round trip at a time.
#pragma unroll
  for (int b = 0; b < kIters; b += kBatch) {
    float4 v[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) v[i] = hi[kd_lt() + (b + i) * kLoaders];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      float* e = reinterpret_cast<float*>(&v[i]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (KD_3XTF32)
          e[j] = kd_lo_b(e[j]);
        else
          e[j] = __uint_as_float(kd_tf32(e[j]));
      }
      (KD_3XTF32 ? lo : hi)[kd_lt() + (b + i) * kLoaders] = v[i];
    }
  }
}


// What every policy refers to, the kernel's own values (as a lambda would): the accumulators, the
// ring's base (generic and shared), the thread's warpgroup, its A rows and its place in its quad, the
// tile's products and the A fragments of the KD_PROMOTE tiles whose wgmmas may be in flight together;
// and no-op defaults of the hooks that only some policies need.
struct kd_ops_base {
  float (&acc)[KD_MW][kAcc];
  unsigned char* const& smem;
  const unsigned& base;
  const int& wg;
  const int& row;  // the thread's A rows: row, row + 8
  const int& t;
  float (&tmp)[kAcc];
  unsigned (&ahi)[KD_FRAGS][4][4];
  unsigned (&alo)[KD_FRAGS][4][4];
  float (&inv_sa)[KD_FRAGS][2];  // KD_F16S: 1 / s of the thread's rows in the tile of fragment set p

  __device__ __forceinline__ void split_tile(int) const {}
  __device__ __forceinline__ void promote() {}
  // KD_F16S's steps of one tile, apart (the consumers split the next tile while this one's wgmmas
  // run): split A into fragment set p, issue from it, promote with its scales.
  template <int p>
  __device__ __forceinline__ void split_a(int) {}
  template <int p>
  __device__ __forceinline__ void issue(int) {}
  template <int p>
  __device__ __forceinline__ void promote_set() {}
  __device__ __forceinline__ void forget() {}
  __device__ __forceinline__ static void finish(const kd_gemm_args&, float (&)[KD_MW][kAcc], int, int, int, long long,
                                                long long, long long, long long) {}
};

// 16-bit A and B (ta = T) straight from shared memory into the accumulators, k16 per wgmma.
template <class T>
struct kd_ops_16bit : kd_ops_base {
  __device__ __forceinline__ void mma_tile(int i) {
    const unsigned sa = base + (i % KD_STAGES) * kStageBytes + wg * KD_MW * 64 * 128;
    const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
    kd_wgmma_stage16<T>(acc, sa, sb);
  }
};

// f32 (see the top of wg_tiled.cu): A's fragments read from the stage into registers and split there,
// B's hi read by wgmma from the stage and its lo from the B-lo ring (or, KD_BLO, the stage); a k tile's
// products chain in tmp, which promote() adds to the f32 sum. X3: KD_3XTF32 (0: plain TF32, B rounded
// in place).
template <bool X3>
struct kd_ops_tf32 : kd_ops_base {
  __device__ __forceinline__ void split_tile(int i) const {
    kd_split_b(reinterpret_cast<float4*>(smem + (i % KD_STAGES) * kStageBytes + kABytes),
               reinterpret_cast<float4*>(smem + KD_STAGES * kStageBytes + (i % kLoRing) * kBBytes));
    kd_fence_async();
  }
  template <class P>
  __device__ __forceinline__ void mma_tile(int i, P) {
    constexpr int p = P::value;
    if constexpr (KD_TA) {
      // ta = T: one ldmatrix.x4 per k8 step. Its four 8 x 4-float matrices (rows +0 / +8, k +0 / +4)
      // are the fragment's a0..a3, each lane getting the float at (lane / 4, lane % 4) of each; lane
      // L addresses row L % 8 + 8 (L / 8 % 2) at k 4 (L / 16). A is swizzled here (KD_A_SWZ): row r's
      // 16-byte chunk c sits at c ^ (r % 8), and r % 8 is L % 8, so the eight rows of a matrix fall in
      // distinct banks.
      const int lane = threadIdx.x & 31;
      const unsigned la = base + (i % KD_STAGES) * kStageBytes + (row - (lane >> 2) + (lane & 7) + (lane & 8)) * 128;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        unsigned x[4];
        const unsigned aj = la + (((2 * j + (lane >> 4)) ^ (lane & 7)) << 4);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                     : "r"(aj));
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          ahi[p][j][q] = kd_tf32(__uint_as_float(x[q]));
          if constexpr (X3) alo[p][j][q] = kd_tf32_w(__uint_as_float(x[q]) - __uint_as_float(ahi[p][j][q]));
        }
      }
    } else {
      // One base pointer per thread, constant offsets from it (see tc_tiled's kd_f32_a_frags).
      const float* sa = reinterpret_cast<const float*>(smem + (i % KD_STAGES) * kStageBytes) + t * kALdF32 + row;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float x = sa[(8 * j + (q >> 1) * 4) * kALdF32 + (q & 1) * 8];
          ahi[p][j][q] = kd_tf32(x);
          if constexpr (X3) alo[p][j][q] = kd_tf32_w(x - __uint_as_float(ahi[p][j][q]));
        }
    }
    const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
    kd_wg_fence();
    if constexpr (X3) {
      const unsigned sl = KD_BLO ? sb + kBBytes : base + KD_STAGES * kStageBytes + (i % kLoRing) * kBBytes;  // B lo
      const unsigned db = kd_desc_lo(sb), dl = kd_desc_lo(sl);
      // Small products first, then hi*hi: the chain's truncation is relative to the group's own sum.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        kd_wgmma_tf32(tmp, alo[p][j], kd_desc_at(db, j * 32), p == 0 && j == 0 ? 0 : 1);
        kd_wgmma_tf32(tmp, ahi[p][j], kd_desc_at(dl, j * 32), 1);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) kd_wgmma_tf32(tmp, ahi[p][j], kd_desc_at(db, j * 32), 1);
    } else {
      const unsigned db = kd_desc_lo(sb);
#pragma unroll
      for (int j = 0; j < 4; ++j) kd_wgmma_tf32(tmp, ahi[p][j], kd_desc_at(db, j * 32), p == 0 && j == 0 ? 0 : 1);
    }
    kd_wg_commit();
  }
  __device__ __forceinline__ void promote() {
    kd_wg_wait<0>();
    kd_fence_regs(tmp);
#pragma unroll
    for (int q = 0; q < kAcc; ++q) acc[0][q] += tmp[q];
  }
  // tmp was promoted; the wgmma asm reads it, so without this it stays live through stream-K's
  // epilogue (64 registers, and the consumers spill at 216).
  __device__ __forceinline__ void forget() {
#pragma unroll
    for (int q = 0; q < kAcc; ++q) tmp[q] = 0.f;
  }
};

// f32 as f16 splits (KD_F16S, see the top of wg_tiled.cu): A's rows split per k tile with their own
// scale, B's halves copied as they are; the promotion undoes A's scale, finish() B's.
struct kd_ops_f16s : kd_ops_base {
  // k tile i's A into fragment set p: its rows' scales (inv_sa[p]) and hi and lo halves.
  template <int p>
  __device__ __forceinline__ void split_a(int i) {
    // Thread (g, t) holds rows row and row + 8 at k 2t, 2t + 1, 2t + 8, 2t + 9 of each k16 step
    // (the register-A fragment); its quad holds the rows' 32 k. Banks: 8g + 2t (row stride 40).
    // ta = N: the same values, each read once from A's [32][BM + 4] k rows (banks 8t + g).
    float2 v[2][2][2];
    unsigned mx[2] = {0u, 0u};
    if constexpr (KD_TA) {
      const float* sa = reinterpret_cast<const float*>(smem + (i % KD_STAGES) * kStageBytes) + row * kALdF32 + 2 * t;
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            v[j][h][r] = *reinterpret_cast<const float2*>(sa + r * 8 * kALdF32 + 16 * j + 8 * h);
            mx[r] = max(mx[r],
                        max(__float_as_uint(v[j][h][r].x) & 0x7fffffffu, __float_as_uint(v[j][h][r].y) & 0x7fffffffu));
          }
    } else {
      const float* sa = reinterpret_cast<const float*>(smem + (i % KD_STAGES) * kStageBytes) + 2 * t * kALdF32 + row;
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            v[j][h][r].x = sa[(16 * j + 8 * h) * kALdF32 + r * 8];
            v[j][h][r].y = sa[(16 * j + 8 * h + 1) * kALdF32 + r * 8];
            mx[r] = max(mx[r],
                        max(__float_as_uint(v[j][h][r].x) & 0x7fffffffu, __float_as_uint(v[j][h][r].y) & 0x7fffffffu));
          }
    }
    float s[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      kd_f16_scale(mx[r], s[r], inv_sa[p][r]);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          kd_split_f16x2(v[j][h][r].x * s[r], v[j][h][r].y * s[r], ahi[p][j][h * 2 + r], alo[p][j][h * 2 + r]);
        }
  }
  // k tile i's wgmmas from fragment set p into tmp (one commit group), which the first starts afresh.
  template <int p>
  __device__ __forceinline__ void issue(int i) {
    const unsigned db = kd_desc_lo(base + (i % KD_STAGES) * kStageBytes + kABytes);
    kd_wg_fence();
    if constexpr (KD_3XTF32) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        kd_wgmma_f16r(tmp, alo[p][j], kd_desc_at(db, j * 32), j == 0 ? 0 : 1);
        kd_wgmma_f16r(tmp, ahi[p][j], kd_desc_at(db, 64 + j * 32), 1);
      }
    }
    // The TF32 class (KD_3XTF32 = 0) keeps hi * hi alone: the tile's first product starts tmp afresh.
#pragma unroll
    for (int j = 0; j < 2; ++j) kd_wgmma_f16r(tmp, ahi[p][j], kd_desc_at(db, j * 32), KD_3XTF32 || j > 0 ? 1 : 0);
    kd_wg_commit();
  }
  template <class P>
  __device__ __forceinline__ void mma_tile(int i, P) {
    split_a<P::value>(i);
    issue<P::value>(i);
  }
  // Waits for the wgmmas and adds tmp, A's scale undone, to the f32 sum.
  template <int p>
  __device__ __forceinline__ void promote_set() {
    kd_wg_wait<0>();
    kd_fence_regs(tmp);
#pragma unroll
    for (int q = 0; q < kAcc; ++q) acc[0][q] = fmaf(tmp[q], inv_sa[p][(q >> 1) & 1], acc[0][q]);
  }
  __device__ __forceinline__ void promote() { promote_set<0>(); }
  // B's column scales: written by kd_wg_split_b16, whose grid this one depends on.
  __device__ __forceinline__ static void finish(const kd_gemm_args& args, float (&acc)[KD_MW][kAcc], int wg, int warp,
                                                int lane, long long z, long long n, long long m0, long long n0) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const float* inv = kd_inv16(args) + z * n;
    if constexpr (KD_SPLITK == 1) {
      // Unsplit plans keep a load beside each product: with the loads below, 4096 x 512 x 4096 ran
      // 118.5 us against 114.7 (kernel lab, H200; the main loop's instructions are the same, their
      // registers are not).
      kd_for_each_acc(acc, wg, warp, lane, m0, n0, [&](long long, long long c, float& v) {
        if (c < n) v *= inv[c];
      });
      return;
    }
    // Split-K: the thread's 2 * BN / 8 columns n0 + 8 j + 2 t + e, all loaded before the first
    // product, one round trip to L2 where a load beside each product waited for one after another
    // (Nsight Compute, 4096 x 128 x 4096, H200: 12% of the consumers' time). Kernel lab, H200:
    // 4096 x 128 x 4096 38.1-38.8 us against 41.9-42.3, 4096 x 256 x 4096 63.6-64.3 against 67.8.
    const long long c0 = n0 + 2 * (lane & 3);
    float sc[KD_BN / 8][2];
#pragma unroll
    for (int j = 0; j < KD_BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) sc[j][e] = c0 + 8 * j + e < n ? inv[c0 + 8 * j + e] : 0.f;
#pragma unroll
    for (int j = 0; j < KD_BN / 8; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[0][4 * j + q] *= sc[j][q & 1];
  }
};
