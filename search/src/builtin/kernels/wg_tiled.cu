// Family wg_tiled: Hopper warpgroup GEMM (wgmma.mma_async, sm_90a), C = alpha * op(A) op(B)
// (+ beta C) (+ bias[row]), tb = N (k contiguous), A and B of one type, f32 accumulation, strided
// batch.
//  - KD_WG warpgroups of 128 threads; warpgroup w owns rows [64 * KD_MW * w, 64 * KD_MW * (w + 1))
//    of the CTA tile (KD_MW m64 blocks) and all KD_BN columns: one m64nBN wgmma per m64 block and
//    k step, accumulators in registers;
//  - every k tile is 128 bytes of k (64 16-bit or 32 f32 elements): smem rows of 128 bytes in the
//    128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8); tiles 1024-byte aligned), the
//    layout wgmma's shared-memory descriptors read k-major;
//  - a KD_STAGES-deep ring filled by cp.async.cg (zero-filled past m, n and k), KD_STAGES - 2 k
//    tiles ahead: the slot refilled in iteration i held tile i - 2, whose wgmmas every warpgroup
//    retired before the iteration's barrier. Each thread's chunk addresses are computed once; k
//    tiles wholly inside k only advance them (edge tiles take the general loaders);
//  - 16-bit types (ta = T only): A and B straight from shared memory, k16 per wgmma;
//  - f32 (KD_3XTF32 = 1, strict fp32): error-compensated TF32, x = hi + lo. B's hi is the raw
//    value in shared memory (wgmma reads it truncated to TF32); its lo (the exact rest, rounded) is
//    written once per k tile into a side-buffer ring by the loading threads. A
//    (ta = T or N) is read into registers and split there with hi rounded to nearest (wgmma's
//    register-A form, the mma.sync m16n8k8 fragment per warp); so lo_a (either sign) times lo_b,
//    the dropped term, carries no bias. A k tile's 3 x 4 products (lo*hi, hi*lo, then hi*hi, per
//    k8) chain in a temporary accumulator; every KD_PROMOTE k tiles it is added to the f32 sum with
//    an IEEE FADD (the promotion of ARCHITECTURE.md), after waiting for those wgmmas. With
//    KD_PROMOTE = 2 the second tile's fragments and issue overlap the first tile's wgmmas.
//    KD_LATE = 1 issues the next stage's copies after the tile's wgmmas instead of before.
//    KD_3XTF32 = 0 is plain TF32, B rounded in place (precision=tf32 keys only);
//  - f32, KD_WS = 1 (warp-specialized): one more warpgroup, the producer, copies the k tiles and
//    splits B; the KD_WG consumer warpgroups only run wgmmas. They meet at mbarriers per ring slot
//    and B-lo buffer instead of a CTA barrier per k tile (see the main loop). KD_WS = 0: every
//    warpgroup copies, splits and computes, in step;
//  - KD_SPLITK > 1 splits the k tiles over blockIdx.z and reduces in a second launch, as tc_tiled;
//    with KD_CLUSTER = 1 (SPLITK 2..8) the splits of one tile form a thread-block cluster and sum
//    their partials through distributed shared memory instead: no workspace, no second launch.
//  - f32, KD_BLO = 1 (with KD_WS): B's lo parts come from the workspace, written once per call by a
//    first launch (kd_wg_split_b), instead of being split by every CTA for every k tile; the
//    producer copies them into the stage after B and no longer splits, and the B-lo ring is gone.
//  - KD_TAIL > 1 (without KD_SPLITK): the tiles past the last whole wave of CTAs are split into
//    KD_TAIL k ranges each, whose partials a second launch (kd_wg_tail_reduce) sums, so that the
//    last wave is made of shorter CTAs.
//  - f32, KD_F16S = 1 (strict fp32, ta = T, KD_WS with two consumers of m64n128, KD_PROMOTE 1; no
//    BLO, SK or CLUSTER): the same three products on f16 wgmmas, twice TF32's rate. x = (hi + lo) / s,
//    hi and lo f16 rounded to nearest, s a power of two that puts the largest |x| of its group in
//    [2^14, 2^15): a row of A per k tile (the quad holding the row agrees by two shuffles; the
//    promotion is an FFMA by 1 / s), a column of B over all of k. f16's 11 significant bits equal
//    TF32's, so the error matches 3xTF32's; each product is exact in f32. A first launch
//    (kd_wg_split_b16) writes B's hi|lo halves per k tile, one 128-byte row, and 1 / s per column;
//    the producer copies those instead of B. A group whose largest |x| is below 2^-112 loses
//    precision (s is clamped to keep 1 / s normal).
//  - KD_SK > 1 (stream-K; f32 with KD_WS and KD_PROMOTE 1, no SPLITK, CLUSTER, TAIL or BLO): KD_SK
//    CTAs each take an equal contiguous run of a batch's tile-major k-tile units. A run is cut into
//    segments at tile boundaries; a tile that one CTA covers whole goes straight to C, the others leave
//    one partial per CTA in the workspace, which a second launch (kd_wg_sk_reduce) sums in CTA order.
//    The producer copies each segment with that tile's plans, so the ring never drains between
//    segments.
// Requirements (the host rules check them): sm_90a; lda, ldb (and batch strides) multiples of 16
// bytes' worth of elements, A and B 16-byte aligned; m, n and k free.
//
// Named parameters:
//   KD_A_T, KD_B_T, KD_C_T element types   KD_TA 1 = T (0 = N: f32 only)   KD_TB 0
//   KD_WG warpgroups (1, 2)   KD_MW m64 blocks per warpgroup (1, 2; 1 for f32; MW * BN <= 256)
//   KD_BN 64 | 128 | 256 (f32: 16 with KD_WS | 64 | 128)   KD_STAGES ring depth (3..8; f32 4..8)
//   KD_SPLITK k splits (1..16)   KD_3XTF32 0|1 (f32)   KD_PROMOTE 1|2 (f32)   KD_LATE 0|1 (f32)
//   KD_WS 0|1 (f32; with KD_LATE = 0)   KD_CLUSTER 0|1 (SPLITK 2..8)   KD_BLO 0|1 (f32, 3xTF32, WS)
//   KD_TAIL 1..16 (SPLITK 1, no BLO)   KD_SK 0 | CTAs (2..units)   KD_F16S 0|1   KD_BETA_ZERO 0|1   KD_BIAS 0|1
// Plan: [KD_BLO = 1: kd_wg_split_b: grid = [any], block = [256]; KD_F16S = 1: kd_wg_split_b16: grid =
//   [batch * n], block = [256]; then] kd_wg_tiled: grid = [ceil(m / (64 * WG * MW)), ceil(n / BN),
//   batch * SPLITK] (KD_TAIL: [tiles + split tiles * (TAIL - 1), 1, batch]; KD_SK: [KD_SK, 1, batch]),
//   block = [128 * (WG + WS)], pdl with KD_BLO or KD_F16S, smem and workspace as wg_tiled_layout.cuh
//   lays them out; then where partial tiles were left (more than one split without KD_CLUSTER,
//   KD_TAIL, stream-K tiles that span CTAs) the launch that sums them, pdl: kd_wg_tiled_reduce grid
//   [any], kd_wg_tail_reduce grid [any, split tiles, batch] or kd_wg_sk_reduce grid [any, tiles of one
//   batch, batch], block [256].
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef KD_A_T
#define KD_A_T __nv_bfloat16
#endif
#ifndef KD_B_T
#define KD_B_T KD_A_T
#endif
#ifndef KD_C_T
#define KD_C_T KD_A_T
#endif
#ifndef KD_TA
#define KD_TA 1
#endif
#ifndef KD_TB
#define KD_TB 0
#endif
#ifndef KD_WG
#define KD_WG 2
#endif
#ifndef KD_MW
#define KD_MW 1
#endif
#ifndef KD_BN
#define KD_BN 128
#endif
#ifndef KD_STAGES
#define KD_STAGES 4
#endif
#ifndef KD_SPLITK
#define KD_SPLITK 1
#endif
#ifndef KD_3XTF32
#define KD_3XTF32 1
#endif
#ifndef KD_BETA_ZERO
#define KD_BETA_ZERO 1
#endif
#ifndef KD_BIAS
#define KD_BIAS 0
#endif
#ifndef KD_PROMOTE
#define KD_PROMOTE 1
#endif
#ifndef KD_LATE
#define KD_LATE 0
#endif
#ifndef KD_WS
#define KD_WS 0
#endif
#ifndef KD_CLUSTER
#define KD_CLUSTER 0
#endif
#ifndef KD_BLO
#define KD_BLO 0
#endif
#ifndef KD_TAIL
#define KD_TAIL 1
#endif
#ifndef KD_SK
#define KD_SK 0
#endif
#ifndef KD_F16S
#define KD_F16S 0
#endif

#if KD_TB != 0
#error "wg_tiled: only tb = N"
#endif
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(__CUDA_ARCH__)
#error "wg_tiled: needs sm_90a (wgmma)"
#endif

// KD_F32: whether the element type is float, for the preprocessor (the two main loops call different
// wgmma forms).
#define KD_CAT2(a, b) a##b
#define KD_CAT(a, b) KD_CAT2(a, b)
#define KD_IS_F32_float 1
#if KD_CAT(KD_IS_F32_, KD_A_T)
#define KD_F32 1
#else
#define KD_F32 0
#endif

#include "wg_tiled_layout.cuh"

typedef KD_A_T kd_t;
// The named parameters as one layout (wg_tiled_layout.cuh: shared memory, workspace, plan), which the
// host rules compile too. The constants below are what the kernel reads; under NVRTC's -default-device
// each is also a __device__ variable of a few bytes in the cubin.
KD_HD constexpr kd_wg_tiled_layout kd_layout() {
  return {sizeof(kd_t), KD_TA,  KD_WG,   KD_MW,     KD_BN,      KD_STAGES, KD_WS,
          KD_PROMOTE,   KD_BLO, KD_F16S, KD_SPLITK, KD_CLUSTER, KD_TAIL,   KD_SK};
}
constexpr int kElem = (int)sizeof(kd_t);
constexpr bool kF32 = kElem == 4;
constexpr int kThreads = kd_layout().threads();
// The threads that copy k tiles and split B: all of them, or the producer warpgroup (the last one).
constexpr int kLoaders = kd_layout().loaders();
constexpr int kBM = kd_layout().bm();
constexpr int kBK = kd_layout().bk();
constexpr int kVec = kd_layout().vec();
constexpr int kAcc = kd_layout().acc();
constexpr int kALdF32 = kd_layout().a_ld_f32();
constexpr int kABytesRaw = kd_layout().a_bytes_raw();
constexpr int kABytes = kd_layout().a_bytes();
constexpr int kBBytes = kd_layout().b_bytes();
constexpr int kStageBytes = kd_layout().stage_bytes();
constexpr int kLoBufs = kd_layout().lo_bufs();
constexpr int kLoRing = kLoBufs ? kLoBufs : 1;  // a modulus that compiles when there is no ring
constexpr int kBarBytes = kd_layout().bar_bytes();
static_assert(kABytes % 1024 == 0 && kABytes >= kABytesRaw, "A tiles 1024-aligned");
static_assert(!KD_WS || 8 * (2 * KD_STAGES + kLoBufs) <= kBarBytes, "the barrier area (KD_WS)");

static_assert(KD_WG == 1 || KD_WG == 2, "KD_WG is 1 or 2");
static_assert(KD_PROMOTE == 1 || KD_PROMOTE == 2, "KD_PROMOTE is 1 or 2");
static_assert(KD_LATE == 0 || KD_LATE == 1, "KD_LATE is 0 or 1");
static_assert(KD_WS == 0 || (KD_WS == 1 && kF32 && !KD_LATE), "KD_WS is 0 or 1 (f32, copies issued by the producer)");
static_assert(KD_MW == 1 || (KD_MW == 2 && !kF32), "KD_MW is 1 (or 2 for 16-bit types)");
static_assert(KD_MW * KD_BN <= 256, "at most 128 accumulator registers per thread");
static_assert(KD_BN == 64 || KD_BN == 128 || (KD_BN == 256 && !kF32) || (KD_BN == 16 && kF32 && KD_WS),
              "KD_BN is 64, 128 or 256 (f32: 16 with KD_WS, 64, 128)");
static_assert(KD_STAGES >= (kF32 ? 4 : 3) && KD_STAGES <= 8, "KD_STAGES out of range");
static_assert(kF32 || KD_TA, "16-bit types need ta = T (k-major A for the descriptor)");
static_assert(sizeof(KD_B_T) == sizeof(KD_A_T), "A and B share one type");
static_assert(KD_CLUSTER == 0 || (KD_CLUSTER == 1 && KD_SPLITK >= 2 && KD_SPLITK <= 8),
              "KD_CLUSTER is 0 or 1 (with 2..8 splits: a portable cluster size)");
static_assert(!KD_CLUSTER || kd_layout().partial_tile_fits(), "the partial tile reuses the ring");
static_assert(KD_BLO == 0 || (KD_BLO == 1 && kF32 && KD_WS && KD_3XTF32), "KD_BLO is 0 or 1 (f32 3xTF32 with KD_WS)");
static_assert(KD_TAIL >= 1 && KD_TAIL <= 16 && (KD_TAIL == 1 || (KD_SPLITK == 1 && !KD_CLUSTER)),
              "KD_TAIL is 1..16 (more than 1 only without KD_SPLITK)");
static_assert(KD_SK == 0 || (KD_SK >= 2 && kF32 && KD_WS && KD_PROMOTE == 1 && KD_SPLITK == 1 && !KD_CLUSTER &&
                               KD_TAIL == 1 && !KD_BLO),
              "KD_SK is 0 or a CTA count >= 2 (f32 with KD_WS and KD_PROMOTE 1; no SPLITK, CLUSTER, TAIL or BLO)");
static_assert(!KD_F16S || (kF32 && KD_TA && KD_WS && KD_WG == 2 && KD_BN == 128 && KD_PROMOTE == 1 && !KD_BLO &&
                             !KD_SK && !KD_CLUSTER && KD_3XTF32), "KD_F16S: f32 ta = T, KD_WS with two m64n128 consumers, KD_PROMOTE 1, no BLO, SK or CLUSTER");
static_assert(KD_TAIL == 1 || !KD_BLO, "KD_TAIL with KD_BLO spills in the producer (ptxas: 56 bytes)");

#include "wg_common.cuh"

// The thread's index among the kLoaders copying threads.
__device__ __forceinline__ int kd_lt() { return KD_WS ? static_cast<int>(threadIdx.x) - 128 * KD_WG : threadIdx.x; }

__device__ __forceinline__ void kd_cp_async16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kd_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kd_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
// Generic-proxy shared-memory writes (cp.async, st.shared) become visible to wgmma's async proxy.
__device__ __forceinline__ void kd_fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// The producer warpgroup's own barrier (id 1), for its threads' copies before the split.
__device__ __forceinline__ void kd_bar_sync_loaders() { asm volatile("bar.sync 1, 128;" ::: "memory"); }
// Every thread of the CTA (id 2), reached from the producer's and the consumers' code alike.
__device__ __forceinline__ void kd_bar_sync_all() { asm volatile("bar.sync 2, %0;" ::"n"(kThreads) : "memory"); }

// KD_SK: the CTA whose unit range [c * units / KD_SK, (c + 1) * units / KD_SK) holds unit u (every
// range non-empty: KD_SK <= units).
__device__ __forceinline__ long long kd_sk_cta(long long u, long long units) { return kd_wg_sk_cta(u, units, KD_SK); }

template <int V>
struct kd_int {
  static constexpr int value = V;
};

// Round to TF32 to nearest (ties away), as tc_tiled: two integer ops for finite values; NaN
// propagates through the lo part.
__device__ __forceinline__ unsigned kd_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
// B's lo part for 3xTF32: B's hi is the raw value, which wgmma reads truncated to TF32; lo is the
// exact rest, rounded to TF32.
__device__ __forceinline__ float kd_lo_b(float x) {
  return __uint_as_float(kd_tf32(x - __uint_as_float(__float_as_uint(x) & 0xffffe000u)));
}

#if KD_F16S
// KD_F16S (see the top): B's hi|lo per k tile (64 halves, one 128-byte row) live in the workspace
// after the partials, then B's 1 / s per column.
__device__ __forceinline__ long long kd_ld16(long long k) { return kd_wg_ld16(k); }
__device__ __forceinline__ float* kd_b16(const kd_gemm_args& args) {
  return static_cast<float*>(args.workspace) + kd_wg_b16_offset(kd_layout().parts(), args.batch, args.m, args.n);
}
__device__ __forceinline__ float* kd_inv16(const kd_gemm_args& args) {
  return kd_b16(args) + args.batch * args.n * kd_ld16(args.k);
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
// One block per column of B (batch * n blocks): the column's max, then its hi|lo halves and 1 / s.
extern "C" __global__ void __launch_bounds__(256) kd_wg_split_b16(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ unsigned warp_max[8];
  const long long n = args.n, k = args.k, ld16 = kd_ld16(k);
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
  unsigned mx = 0;
  for (long long kk = 4 * threadIdx.x; kk < k; kk += 1024) {
    const float4 v = load4(kk);
    mx = max(max(mx, __float_as_uint(v.x) & 0x7fffffffu), __float_as_uint(v.y) & 0x7fffffffu);
    mx = max(max(mx, __float_as_uint(v.z) & 0x7fffffffu), __float_as_uint(v.w) & 0x7fffffffu);
  }
  for (int o = 16; o; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = warp_max[0];
  for (int w = 1; w < 8; ++w) mx = max(mx, warp_max[w]);
  float s, inv;
  kd_f16_scale(mx, s, inv);
  __half* out = reinterpret_cast<__half*>(kd_b16(args) + col * ld16);
  for (long long kk = 4 * threadIdx.x; kk < ld16; kk += 1024) {
    const float4 v = load4(kk);
    uint2 hi, lo;
    kd_split_f16x2(v.x * s, v.y * s, hi.x, lo.x);
    kd_split_f16x2(v.z * s, v.w * s, hi.y, lo.y);
    __half* o = out + (kk >> 5) * 64 + (kk & 31);
    *reinterpret_cast<uint2*>(o) = hi;
    *reinterpret_cast<uint2*>(o + 32) = lo;
  }
  if (threadIdx.x == 0) kd_inv16(args)[col] = inv;
}
#endif

#if KD_BLO
// KD_BLO: B's lo parts, computed once per call by kd_wg_split_b instead of once per CTA and k tile,
// live in the workspace as [batch][n][ldl] floats (ldl = k rounded up to 4: 16-byte rows), after the
// split-K partials (rounded up to 16 bytes). The plan's workspace covers both.
__device__ __forceinline__ long long kd_blo_ld(long long k) { return kd_wg_blo_ld(k); }
__device__ __forceinline__ float* kd_blo(const kd_gemm_args& args) {
  return static_cast<float*>(args.workspace) + kd_wg_blo_offset(kd_layout().parts(), args.batch, args.m, args.n);
}
// Launch 0 of a KD_BLO plan. kd_wg_tiled runs as its programmatic dependent and waits on the grid
// before its first copy of a lo tile; its blocks may become resident once every block here started.
extern "C" __global__ void __launch_bounds__(256) kd_wg_split_b(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long k = args.k, ldl = kd_blo_ld(k), per = args.n * ldl, total = per * args.batch;
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

// Copies a ROWS x 128-byte tile (row r at X + (row0 + r) * ld + k0) into the swizzled layout at
// smem byte address `dst`; rows past rows_n and elements past k zero-fill.
template <int ROWS>
__device__ __forceinline__ void kd_load_swz(unsigned dst, const kd_t* X, long long ld, long long rows_n,
                                            long long k, long long row0, long long k0) {
  constexpr int kChunks = ROWS * 8;
#pragma unroll
  for (int i = 0; i < (kChunks + kLoaders - 1) / kLoaders; ++i) {
    const int c = kd_lt() + i * kLoaders;
    if (kChunks % kLoaders != 0 && c >= kChunks) break;
    const int r = c >> 3, ch = c & 7;
    const long long gr = row0 + r, gk = k0 + ch * kVec;
    long long left = k - gk;
    left = left < 0 ? 0 : (left > kVec ? kVec : left);
    const int bytes = gr < rows_n ? static_cast<int>(left) * kElem : 0;
    const kd_t* src = bytes > 0 ? X + gr * ld + gk : X;
    kd_cp_async16(dst + r * 128 + ((ch ^ (r & 7)) << 4), src, bytes);
  }
}
// f32 A, ta = N: a 32 (k) x BM (m) tile, row stride kALdF32 floats, unswizzled.
__device__ __forceinline__ void kd_load_a_kn(unsigned dst, const float* X, long long ld, long long m,
                                             long long k, long long m0, long long k0) {
  constexpr int kPerRow = kBM / 4, kChunks = kBK * kPerRow;
#pragma unroll
  for (int i = 0; i < (kChunks + kLoaders - 1) / kLoaders; ++i) {
    const int c = kd_lt() + i * kLoaders;
    if (kChunks % kLoaders != 0 && c >= kChunks) break;
    const int r = c / kPerRow, e = (c % kPerRow) * 4;
    const long long gk = k0 + r, gm = m0 + e;
    long long left = m - gm;
    left = left < 0 ? 0 : (left > 4 ? 4 : left);
    const int bytes = gk < k ? static_cast<int>(left) * 4 : 0;
    const float* src = bytes > 0 ? X + gk * ld + gm : X;
    kd_cp_async16(dst + (r * kALdF32 + e) * 4, src, bytes);
  }
}
// f32 A, ta = T: BM (m) x 32 (k), row stride kALdF32 floats, unswizzled.
__device__ __forceinline__ void kd_load_a_mk(unsigned dst, const float* X, long long ld, long long m,
                                             long long k, long long m0, long long k0) {
  constexpr int kChunks = kBM * 8;
#pragma unroll
  for (int i = 0; i < (kChunks + kLoaders - 1) / kLoaders; ++i) {
    const int c = kd_lt() + i * kLoaders;
    if (kChunks % kLoaders != 0 && c >= kChunks) break;
    const int r = c >> 3, e = (c & 7) * 4;
    const long long gm = m0 + r, gk = k0 + e;
    long long left = k - gk;
    left = left < 0 ? 0 : (left > 4 ? 4 : left);
    const int bytes = gm < m ? static_cast<int>(left) * 4 : 0;
    const float* src = bytes > 0 ? X + gm * ld + gk : X;
    kd_cp_async16(dst + (r * kALdF32 + e) * 4, src, bytes);
  }
}

// The thread's 16-byte chunks of one operand's k tile, fixed per thread and computed once, for k
// tiles wholly inside k (the per-tile cost is one address add per chunk; edge tiles in k take the
// loaders above). Chunk i sits at element offset off + i * step + k0 * kstride of the operand and at
// shared byte offset dst + i * dstep; it is valid while i * rstep < rows_left, and then carries
// `bytes` (16, or fewer at an m edge for ta = N). For kd_load_edge: the thread's first chunk starts
// kfix elements (or, ta = N, k rows) into the k tile, and chunk i kstep k rows further.
struct kd_chunks {
  long long off, step, kstride;
  unsigned dst, dstep;
  long long rows_left;
  int rstep, bytes, kfix, kstep;
};
// Row-major rows of 128 bytes of k (B, f32 A with ta = T, 16-bit A); swizzled or padded rows.
template <int ROWS, bool SWZ>
__device__ __forceinline__ kd_chunks kd_plan_rows(long long ld, long long rows_n, long long row0) {
  static_assert(ROWS * 8 % kLoaders == 0, "whole chunk rounds");
  const int r = kd_lt() >> 3, ch = kd_lt() & 7;
  kd_chunks p;
  p.off = (row0 + r) * ld + ch * kVec;
  p.step = (kLoaders / 8) * ld;
  p.kstride = 1;
  p.dst = SWZ ? r * 128 + ((ch ^ (r & 7)) << 4) : (r * kALdF32 + ch * 4) * 4;
  p.dstep = SWZ ? (kLoaders / 8) * 128 : (kLoaders / 8) * kALdF32 * 4;
  p.rows_left = rows_n - row0 - r;
  p.rstep = kLoaders / 8;
  p.bytes = 16;
  p.kfix = ch * kVec;
  p.kstep = 0;
  return p;
}
// f32 A, ta = N: 32 k rows of BM m elements.
__device__ __forceinline__ kd_chunks kd_plan_kn(long long ld, long long m, long long m0) {
  constexpr int kPerRow = kBM / 4;
  static_assert(kLoaders % kPerRow == 0 && kBK * kPerRow % kLoaders == 0, "whole chunk rounds");
  const int r = kd_lt() / kPerRow, e = (kd_lt() % kPerRow) * 4;
  kd_chunks p;
  p.off = r * ld + m0 + e;
  p.step = (kLoaders / kPerRow) * ld;
  p.kstride = ld;
  p.dst = (r * kALdF32 + e) * 4;
  p.dstep = (kLoaders / kPerRow) * kALdF32 * 4;
  long long left = m - m0 - e;
  left = left < 0 ? 0 : (left > 4 ? 4 : left);
  p.bytes = static_cast<int>(left) * 4;
  p.rows_left = p.bytes > 0 ? kBK : 0;
  p.rstep = 0;
  p.kfix = r;
  p.kstep = kLoaders / kPerRow;
  return p;
}
template <int ITERS>
__device__ __forceinline__ void kd_load_fast(unsigned dst, const kd_t* X, const kd_chunks& p, long long k0) {
  const kd_t* src = X + p.off + k0 * p.kstride;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const bool ok = static_cast<long long>(i) * p.rstep < p.rows_left;
    kd_cp_async16(dst + p.dst + i * p.dstep, ok ? src + i * p.step : X, ok ? p.bytes : 0);
  }
}
// Any k tile, k edge included, from the same plan: fewer live registers than the general loaders,
// for the producer warpgroup (KD_WS), which runs in 72 registers beside two consumers.
template <int ITERS>
__device__ __forceinline__ void kd_load_edge(unsigned dst, const kd_t* X, const kd_chunks& p, long long k0,
                                             long long k) {
  const long long kl = k - k0 - p.kfix;
  const int bytes = p.kstep ? p.bytes : static_cast<int>(kl < 0 ? 0 : (kl > kVec ? kVec : kl)) * kElem;
  const kd_t* src = X + p.off + k0 * p.kstride;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const bool ok = static_cast<long long>(i) * p.rstep < p.rows_left && i * p.kstep < kl && bytes > 0;
    kd_cp_async16(dst + p.dst + i * p.dstep, ok ? src + i * p.step : X, ok ? bytes : 0);
  }
}

// The wgmma wrappers (kd_wgmma<T>, kd_wgmma_tf32, kd_wgmma_f16r), written by tools/dev/gen_wgmma.py
// into the build tree and embedded with the kernels.
#include "wg_wgmma.cuh"

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
#if KD_3XTF32
        e[j] = kd_lo_b(e[j]);
#else
        e[j] = __uint_as_float(kd_tf32(e[j]));
#endif
      }
      (KD_3XTF32 ? lo : hi)[kd_lt() + (b + i) * kLoaders] = v[i];
    }
  }
}


extern "C" __global__ void __launch_bounds__(kThreads, 1) KD_CLUSTER_DIMS kd_wg_tiled(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned raw_addr = kd_smem_addr(smem_raw);
  const unsigned base = (raw_addr + 1023u) & ~1023u;
  const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const long long m = args.m, n = args.n, k = args.k;
#if KD_TAIL > 1
  // blockIdx.x runs over the tiles that fill whole waves, one CTA each (m fastest), then over the
  // KD_TAIL k ranges of each remaining tile, whose partials a second launch sums; the grid's extent
  // (tiles + tail * (KD_TAIL - 1)) says how many tiles are split. split < 0: a whole tile.
  const long long z = blockIdx.z;
  const long long tm = (m + kBM - 1) / kBM, tiles = tm * ((n + KD_BN - 1) / KD_BN);
  const long long whole = tiles - (static_cast<long long>(gridDim.x) - tiles) / (KD_TAIL - 1);
  const long long cta = blockIdx.x;
  const long long tile_id = cta < whole ? cta : whole + (cta - whole) / KD_TAIL;
  const int split = cta < whole ? -1 : static_cast<int>((cta - whole) % KD_TAIL);
  const long long m0 = tile_id % tm * kBM;
  const long long n0 = tile_id / tm * KD_BN;
  const int parts = split < 0 ? 1 : KD_TAIL;
#elif KD_SK
  // Stream-K: the batch's tiles * ktiles k-tile units, tile-major, in KD_SK equal contiguous ranges,
  // one per CTA; a range that starts or ends inside a tile leaves a partial that kd_wg_sk_reduce sums.
  const long long z = blockIdx.z;
  // 32-bit unit arithmetic (the host rules keep units below 2^31): fewer registers in the producer.
  const int tm = static_cast<int>((m + kBM - 1) / kBM), tiles = tm * static_cast<int>((n + KD_BN - 1) / KD_BN);
  const int ktiles_all = static_cast<int>((k + kBK - 1) / kBK), units = tiles * ktiles_all;
  const int u0 = static_cast<int>(blockIdx.x * static_cast<long long>(units) / KD_SK);
  const int u1 = static_cast<int>((blockIdx.x + 1LL) * units / KD_SK);
#else
  const long long z = blockIdx.z / KD_SPLITK;
  const int split = static_cast<int>(blockIdx.z % KD_SPLITK);
  const long long m0 = static_cast<long long>(blockIdx.x) * kBM;
  const long long n0 = static_cast<long long>(blockIdx.y) * KD_BN;
  constexpr int parts = KD_SPLITK;
#endif
  const kd_t* A = static_cast<const kd_t*>(args.a) + z * args.stride_a;
#if KD_F16S
  const kd_t* B = kd_b16(args) + z * n * kd_ld16(k);
  const long long ldb = kd_ld16(k), kb = kd_ld16(k);
#else
  const kd_t* B = static_cast<const kd_t*>(args.b) + z * args.stride_b;
  const long long ldb = args.ldb, kb = k;
#endif

#if KD_SK
  const int nk = u1 - u0;
#else
  const long long ktiles = (k + kBK - 1) / kBK;
  const long long per = (ktiles + parts - 1) / parts;
  const long long kt0 = (split < 0 ? 0 : split) * per;
  const long long kt1 = kt0 + per < ktiles ? kt0 + per : ktiles;
  const int nk = kt1 > kt0 ? static_cast<int>(kt1 - kt0) : 0;
#endif

  constexpr int kAIters = kF32 && !KD_TA ? kBK * (kBM / 4) / kLoaders : kBM * 8 / kLoaders;
  constexpr int kBIters = KD_BN * 8 / kLoaders;
  auto plan_a = [&](long long row0) {
    return kF32 && !KD_TA ? kd_plan_kn(args.lda, m, row0) : kd_plan_rows<kBM, !kF32>(args.lda, m, row0);
  };
  auto plan_b = [&](long long col0) { return kd_plan_rows<KD_BN, true>(ldb, n, col0); };
#if !KD_SK
  const kd_chunks pa = plan_a(m0), pb = plan_b(n0);
#endif
#if KD_BLO
  const float* Blo = kd_blo(args) + z * n * kd_blo_ld(k);
  const kd_chunks pl = kd_plan_rows<KD_BN, true>(kd_blo_ld(k), n, n0);
#endif
  // KD_BLO: a stage's lo tile, after its B tile.
  [[maybe_unused]] auto load_lo = [&](int slot, long long kt) {  // unused with KD_SK
#if KD_BLO
    const unsigned sl = base + slot * kStageBytes + kABytes + kBBytes;
    const long long k0 = kt * kBK;
    kd_load_edge<kBIters>(sl, Blo, pl, k0, k);
#endif
  };
  // The producer warpgroup's copies of one stage (KD_WS), with the plans of the stage's tile. KD_SK
  // keeps a segment's plans const in the loop that uses them: plans that change inside the loop (at a
  // tile boundary) measured 15-20% slower (kernel lab, H200), as the producer's per-tile path grew.
  auto load_ws = [&](int slot, long long kt, const kd_chunks& qa, const kd_chunks& qb) {
    const unsigned sa = base + slot * kStageBytes, sb = sa + kABytes;
    const long long k0 = kt * kBK;
    // The general loader even inside k: its per-chunk bounds spread the producer's copies, and the
    // tight loop of kd_load_fast measured 1-3% slower here and 18% with KD_BLO's third tile (kernel
    // lab, H200, session 12), probably a burst of copies queued ahead of the consumers' fragment
    // loads (not profiled).
    kd_load_edge<kAIters>(sa, A, qa, k0, k);
    kd_load_edge<kBIters>(sb, B, qb, k0, kb);
  };
#if KD_SK
  // The k tile and plans of the CTA's unit i (a division: the prologue's few tiles only).
  auto load_unit = [&](int slot, int i) {
    const int u = u0 + i, t = u / ktiles_all;
    load_ws(slot, u - t * ktiles_all, plan_a(static_cast<long long>(t % tm) * kBM), plan_b(static_cast<long long>(t / tm) * KD_BN));
  };
#else
  auto load_ab = [&](int slot, long long kt) {
    const unsigned sa = base + slot * kStageBytes, sb = sa + kABytes;
    const long long k0 = kt * kBK;
    if constexpr (KD_WS) {
      load_ws(slot, kt, pa, pb);
      return;
    }
    if (k0 + kBK <= k) {
      kd_load_fast<kAIters>(sa, A, pa, k0);
      kd_load_fast<kBIters>(sb, B, pb, k0);
      return;
    }
    if constexpr (!kF32)
      kd_load_swz<kBM>(sa, A, args.lda, m, k, m0, k0);
    else if constexpr (KD_TA)
      kd_load_a_mk(sa, reinterpret_cast<const float*>(A), args.lda, m, k, m0, k0);
    else
      kd_load_a_kn(sa, reinterpret_cast<const float*>(A), args.lda, m, k, m0, k0);
    kd_load_swz<KD_BN>(sb, B, args.ldb, n, k, n0, k0);
  };
  auto load_stage = [&](int slot, long long kt) {
    load_ab(slot, kt);
    load_lo(slot, kt);
  };
#endif

  // Prologue: tiles 0 .. STAGES-3, one commit group each (empty past the end), by the loaders.
  if (!KD_WS || wg == KD_WG) {
#if KD_F16S
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#if KD_BLO
    // The operands' copies go out first; the lo tiles wait for kd_wg_split_b's grid. Group 0 holds
    // every prologue A and B copy, so waiting for tile s's group still covers them.
#pragma unroll
    for (int s = 0; s < KD_STAGES - 2; ++s)
      if (s < nk) load_ab(s, kt0 + s);
    asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
    for (int s = 0; s < KD_STAGES - 2; ++s) {
      if (s < nk) load_lo(s, kt0 + s);
      kd_cp_commit();
    }
#elif KD_SK
#pragma unroll
    for (int s = 0; s < KD_STAGES - 2; ++s) {
      if (s < nk) load_unit(s, s);
      kd_cp_commit();
    }
#else
#pragma unroll
    for (int s = 0; s < KD_STAGES - 2; ++s) {
      if (s < nk) load_stage(s, kt0 + s);
      kd_cp_commit();
    }
#endif
  }

  float acc[KD_MW][kAcc];
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[mw][i] = 0.f;

#if !KD_F32
  {
    // Before iteration i, STAGES-2+i groups are committed (tiles 0 .. i+STAGES-3): at most STAGES-3
    // pending means tile i has landed.
    for (int i = 0; i < nk; ++i) {
      kd_cp_wait<KD_STAGES - 3>();
      kd_fence_async();
      __syncthreads();
      const int next = i + KD_STAGES - 2;
      if (next < nk) load_stage(next % KD_STAGES, kt0 + next);
      kd_cp_commit();
      const unsigned sa = base + (i % KD_STAGES) * kStageBytes + wg * KD_MW * 64 * 128;
      const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
      kd_wg_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int mw = 0; mw < KD_MW; ++mw)
          kd_wgmma<kd_t>(acc[mw], kd_desc(sa + mw * 64 * 128 + ks * 32), kd_desc(sb + ks * 32), 1);
      kd_wg_commit();
      kd_wg_wait<1>();
    }
    kd_wg_wait<0>();
#pragma unroll
    for (int mw = 0; mw < KD_MW; ++mw) kd_fence_regs(acc[mw]);
  }
#else
  {
    unsigned char* smem = smem_raw + (base - raw_addr);
    auto split_tile = [&](int i) {
      kd_split_b(reinterpret_cast<float4*>(smem + (i % KD_STAGES) * kStageBytes + kABytes),
                 reinterpret_cast<float4*>(smem + KD_STAGES * kStageBytes + (i % kLoRing) * kBBytes));
      kd_fence_async();
    };
    float tmp[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) tmp[i] = 0.f;
    const int g = lane >> 2, t = lane & 3;  // the thread's place in its warp's fragments
    const int row = wg * 64 + warp * 16 + g;  // the thread's A rows: row, row + 8
    // The A fragments of the KD_PROMOTE tiles whose wgmmas may be in flight together.
    unsigned ahi[KD_PROMOTE][4][4];
#if KD_3XTF32
    unsigned alo[KD_PROMOTE][4][4];
#endif
    // Tile i's products into tmp (one commit group): A fragments from the stage, split in
    // registers, then the wgmmas. P: the tile's place in its promotion group (its fragment set).
    [[maybe_unused]] float inv_sa[2] = {1.f, 1.f};
    auto mma_tile = [&](int i, auto P) {
      constexpr int p = decltype(P)::value;
#if KD_F16S
      {
        // Thread (g, t) holds rows row and row + 8 at k 2t, 2t + 1, 2t + 8, 2t + 9 of each k16 step
        // (the register-A fragment); its quad holds the rows' 32 k. Banks: 8g + 2t (row stride 40).
        const float* sa = reinterpret_cast<const float*>(smem + (i % KD_STAGES) * kStageBytes) + row * kALdF32 + 2 * t;
        float2 v[2][2][2];
        unsigned mx[2] = {0u, 0u};
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              v[j][h][r] = *reinterpret_cast<const float2*>(sa + r * 8 * kALdF32 + 16 * j + 8 * h);
              mx[r] = max(mx[r], max(__float_as_uint(v[j][h][r].x) & 0x7fffffffu, __float_as_uint(v[j][h][r].y) & 0x7fffffffu));
            }
        float s[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
          mx[r] = max(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
          kd_f16_scale(mx[r], s[r], inv_sa[r]);
        }
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              kd_split_f16x2(v[j][h][r].x * s[r], v[j][h][r].y * s[r], ahi[p][j][h * 2 + r], alo[p][j][h * 2 + r]);
            }
        const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
        kd_wg_fence();
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          kd_wgmma_f16r(tmp, alo[p][j], kd_desc(sb + j * 32), j == 0 ? 0 : 1);
          kd_wgmma_f16r(tmp, ahi[p][j], kd_desc(sb + 64 + j * 32), 1);
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) kd_wgmma_f16r(tmp, ahi[p][j], kd_desc(sb + j * 32), 1);
        kd_wg_commit();
        return;
      }
#endif
      // One base pointer per thread, constant offsets from it (see tc_tiled's kd_f32_a_frags).
      const float* sa = reinterpret_cast<const float*>(smem + (i % KD_STAGES) * kStageBytes) +
                        (KD_TA ? row * kALdF32 + t : t * kALdF32 + row);
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float x = KD_TA ? sa[(q & 1) * 8 * kALdF32 + 8 * j + (q >> 1) * 4]
                                : sa[(8 * j + (q >> 1) * 4) * kALdF32 + (q & 1) * 8];
          ahi[p][j][q] = kd_tf32(x);
#if KD_3XTF32
          alo[p][j][q] = kd_tf32(x - __uint_as_float(ahi[p][j][q]));
#endif
        }
      const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
      kd_wg_fence();
#if KD_3XTF32
      const unsigned sl = KD_BLO ? sb + kBBytes : base + KD_STAGES * kStageBytes + (i % kLoRing) * kBBytes;  // B lo
      // Small products first, then hi*hi: the chain's truncation is relative to the group's own sum.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        kd_wgmma_tf32(tmp, alo[p][j], kd_desc(sb + j * 32), p == 0 && j == 0 ? 0 : 1);
        kd_wgmma_tf32(tmp, ahi[p][j], kd_desc(sl + j * 32), 1);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) kd_wgmma_tf32(tmp, ahi[p][j], kd_desc(sb + j * 32), 1);
#else
#pragma unroll
      for (int j = 0; j < 4; ++j) kd_wgmma_tf32(tmp, ahi[p][j], kd_desc(sb + j * 32), p == 0 && j == 0 ? 0 : 1);
#endif
      kd_wg_commit();
    };
    auto promote = [&] {
      kd_wg_wait<0>();
      kd_fence_regs(tmp);
#pragma unroll
      for (int q = 0; q < kAcc; ++q) {
#if KD_F16S
        acc[0][q] = fmaf(tmp[q], inv_sa[(q >> 1) & 1], acc[0][q]);
#else
        acc[0][q] += tmp[q];
#endif
      }
    };
#if !KD_WS
    if (nk > 0) {
      kd_cp_wait<KD_STAGES - 3>();
      __syncthreads();
      split_tile(0);
    }
    // One k tile. Before tile i, tiles 0 .. i+STAGES-3 are committed; at most STAGES-4 pending
    // means tile i+1 has landed (this step splits it). The barrier also publishes tile i's split.
    // LAST: promote after it.
    auto tile = [&](int i, auto P, auto LAST) {
      constexpr int p = decltype(P)::value;
      kd_cp_wait<KD_STAGES - 4>();
      __syncthreads();
      const int next = i + KD_STAGES - 2;
#if !KD_LATE
      if (next < nk) load_stage(next % KD_STAGES, kt0 + next);
      kd_cp_commit();
#endif
      mma_tile(i, P);
#if KD_LATE
      if (next < nk) load_stage(next % KD_STAGES, kt0 + next);
      kd_cp_commit();
#endif
      // At most two tiles' wgmmas in flight: the previous tile's A registers are reused next.
      if constexpr (p > 0) kd_wg_wait<1>();
      if (i + 1 < nk) split_tile(i + 1);
      if constexpr (decltype(LAST)::value) promote();
    };
#else
    // Warp-specialized (KD_WS = 1): the last warpgroup copies every k tile, waits for it, splits
    // its B and arrives on the stage's `full` barrier; the consumer warpgroups wait on `full`, run
    // the tile's wgmmas and, once those retired, arrive on the stage's `empty` barrier and the B-lo
    // buffer's `lofree` barrier, which the producer waits on before refilling either. No CTA-wide
    // barrier in the loop: the consumers drift apart, so one's promotion overlaps the other's
    // wgmmas. Phases: the u-th use of a barrier (u = tile / ring size) completes phase u & 1.
    const unsigned bars = base + KD_STAGES * kStageBytes + kLoBufs * kBBytes;
    auto full = [&](int i) { return bars + 8 * (i % KD_STAGES); };
    auto empty = [&](int i) { return bars + 8 * (KD_STAGES + i % KD_STAGES); };
    auto lofree = [&](int i) { return bars + 8 * (2 * KD_STAGES + i % kLoRing); };
    if (threadIdx.x == 0) {
      for (int s = 0; s < KD_STAGES; ++s) {
        kd_mbar_init(full(s), kLoaders);
        kd_mbar_init(empty(s), 4 * KD_WG);
      }
      if constexpr (!KD_BLO && !KD_F16S)
        for (int s = 0; s < kLoBufs; ++s) kd_mbar_init(lofree(s), 4 * KD_WG);
      kd_mbar_fence_init();
    }
    __syncthreads();
    if (wg == KD_WG) {
      // 384 threads start at 168 registers each; the producer needs few, the consumers' two 64-column
      // accumulators and A fragments need more (ptxas: no spills at 72 / 216).
      // KD_SK: the producer's per-segment plans need more (NVRTC: 88 spills 52 bytes, 96 none); its
      // consumers fit in 200.
      if constexpr (KD_WG == 2) kd_setmaxnreg_dec<KD_SK ? 96 : 72>();
      // The prologue above committed tiles 0 .. D-1 (D = STAGES-2). Step t splits tile t into a
      // B-lo buffer whose tile t - kLoBufs the consumers retired, publishes it, then copies tile
      // t + D into the slot of tile t + D - STAGES once retired. With two tiles per promotion a
      // consumer holds tile t - 1 while waiting for tile t, so D <= STAGES - 2 and kLoBufs >= 2
      // never deadlock.
      auto publish = [&](int i) {
        kd_cp_wait<KD_STAGES - 3>();
        kd_fence_async();
        kd_bar_sync_loaders();
        if constexpr (!KD_BLO && !KD_F16S) {
          if (i >= kLoBufs) kd_mbar_wait(lofree(i), ((i / kLoRing) - 1) & 1);
          split_tile(i);
        }
        kd_mbar_arrive(full(i));
      };
      auto refill_wait = [&](int next) {
        if (next >= KD_STAGES) kd_mbar_wait(empty(next), ((next / KD_STAGES) - 1) & 1);
      };
#if KD_SK
      // As below, with the copies of unit j = i + STAGES - 2 grouped by the tile they belong to.
      int i = 0;
      for (int j = KD_STAGES - 2; j < nk;) {
        const int u = u0 + j, t = u / ktiles_all;
        const int e = (t + 1) * ktiles_all - u0 < nk ? (t + 1) * ktiles_all - u0 : nk;
        const kd_chunks qa = plan_a(static_cast<long long>(t % tm) * kBM), qb = plan_b(static_cast<long long>(t / tm) * KD_BN);
        for (int kt = u - t * ktiles_all; j < e; ++j, ++i, ++kt) {
          publish(i);
          refill_wait(j);
          load_ws(j % KD_STAGES, kt, qa, qb);
          kd_cp_commit();
        }
      }
      for (; i < nk; ++i) {
        publish(i);
        kd_cp_commit();
      }
#else
      for (int i = 0; i < nk; ++i) {
        publish(i);
        const int next = i + KD_STAGES - 2;
        if (next < nk) {
          refill_wait(next);
          load_stage(next % KD_STAGES, kt0 + next);
        }
        kd_cp_commit();
      }
#endif
      kd_cp_wait<0>();
#if KD_CLUSTER
      kd_bar_sync_all();  // with the consumers' below: the ring is free for the partial tile
      kd_cluster_finish(args, base, z, m0, n0);
#endif
      return;
    }
    if constexpr (KD_WG == 2) kd_setmaxnreg_inc<KD_SK ? 200 : 216>();
    auto release = [&](int i) {
      if (lane == 0) {
        kd_mbar_arrive(empty(i));
        if constexpr (!KD_BLO && !KD_F16S) kd_mbar_arrive(lofree(i));
      }
    };
    auto tile = [&](int i, auto P, auto LAST) {
      constexpr int p = decltype(P)::value;
      kd_mbar_wait(full(i), (i / KD_STAGES) & 1);
      mma_tile(i, P);
      // At most two tiles' wgmmas in flight: the previous tile's A registers are reused next.
      if constexpr (p > 0) {
        kd_wg_wait<1>();
        release(i - 1);
      }
      if constexpr (decltype(LAST)::value) {
        promote();
        release(i);
      }
    };
#endif
#if KD_SK
    // A segment ends at its tile's last k tile or the CTA's last unit. A tile that one CTA covers
    // whole goes to C; otherwise the segment's partial goes to workspace slot (CTA - the tile's
    // first CTA), [slot][batch][n][m], which kd_wg_sk_reduce sums in slot order.
    auto sk_flush = [&](long long u) {
      // tmp was promoted; the wgmma asm reads it, so without this it stays live through the epilogue
      // (64 registers, and the consumers spill at 216).
#pragma unroll
      for (int q = 0; q < kAcc; ++q) tmp[q] = 0.f;
      const long long t = u / ktiles_all, ts = t * ktiles_all;  // once per segment
      const long long sm0 = t % tm * kBM, sn0 = t / tm * KD_BN;
      const long long first = kd_sk_cta(ts, units), last = kd_sk_cta(ts + ktiles_all - 1, units);
      if (first == last) {
        KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
        kd_for_each_acc(acc, wg, warp, lane, sm0, sn0,
                        [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
      } else {
        float* W = static_cast<float*>(args.workspace) + ((blockIdx.x - first) * args.batch + z) * m * n;
        kd_for_each_acc(acc, wg, warp, lane, sm0, sn0, [&](long long r, long long c, float v) {
          if (r < m && c < n) W[r + c * m] = v;
        });
      }
#pragma unroll
      for (int q = 0; q < kAcc; ++q) acc[0][q] = 0.f;
    };
    // One segment per pass: its k tiles in the same loop as an unsplit tile's (the compiler
    // unrolls it and overlaps a promotion with the next tile's fragment loads; one loop with the
    // flush inside measured 11% slower, kernel lab, H200), then the flush.
    int kt = u0 % ktiles_all;
    for (int i = 0; i < nk;) {
      const int seg = nk - i < ktiles_all - kt ? nk - i : ktiles_all - kt;
      const int e = i + seg;
      for (; i < e; ++i) tile(i, kd_int<0>{}, kd_int<true>{});
      if (i == nk) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
      sk_flush(u0 + i - 1);
      kt = 0;
    }
#else
    int i = 0;
    for (; i + KD_PROMOTE <= nk; i += KD_PROMOTE) {
      tile(i, kd_int<0>{}, kd_int<KD_PROMOTE == 1>{});
#if KD_PROMOTE > 1
      tile(i + 1, kd_int<1>{}, kd_int<KD_PROMOTE == 2>{});
#endif
    }
    for (; i < nk; ++i) tile(i, kd_int<0>{}, kd_int<true>{});
#endif
  }
#endif
  kd_cp_wait<0>();

#if KD_SK
  // Every segment was written in the loop.
#elif KD_CLUSTER
  // Every warpgroup's wgmmas have retired and every copy has landed: the ring holds the partial tile.
  kd_bar_sync_all();
  float* P = reinterpret_cast<float*>(smem_raw + (base - raw_addr));
  kd_for_each_acc(acc, wg, warp, lane, 0, 0, [&](long long r, long long c, float v) { P[r + c * kBM] = v; });
  kd_cluster_finish(args, base, z, m0, n0);
#else
#if KD_F16S
  // B's column scales: written by kd_wg_split_b16, whose grid this one depends on.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  {
    const float* inv = kd_inv16(args) + z * n;
    kd_for_each_acc(acc, wg, warp, lane, m0, n0, [&](long long, long long c, float& v) {
      if (c < n) v *= inv[c];
    });
  }
#endif
  if (KD_TAIL > 1 ? split < 0 : KD_SPLITK == 1) {
    KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
    kd_for_each_acc(acc, wg, warp, lane, m0, n0,
                    [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
  } else {
    // The reduce launch may start now (programmatic dependent launch: it waits for this grid to
    // complete before reading; launched normally, this does nothing).
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    // Partial tile to workspace [split][batch][n][m] (f32, column-major like C).
    float* W = static_cast<float*>(args.workspace) + (static_cast<long long>(split) * args.batch + z) * m * n;
    kd_for_each_acc(acc, wg, warp, lane, m0, n0, [&](long long r, long long c, float v) {
      if (r < m && c < n) W[r + c * m] = v;
    });
  }
#endif
}

// The S f32 partials of output idx of C (workspace partials S apart by `stride` floats), summed in
// split order, then the epilogue; kd_sum_partials4 does rows row .. row + 3 of one column (idx a
// multiple of 4) with 16-byte loads, same order, same bits. S is a constant where split-K and
// KD_TAIL inline them (the loop unrolls) and a run-time count for KD_SK.
__device__ __forceinline__ void kd_sum_partials4(const kd_gemm_args& args, KD_C_T* C, const float* W, long long stride,
                                                 long long idx, long long row, long long col, int S) {
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int s = 0; s < S; ++s) kd_add4(sum, *reinterpret_cast<const float4*>(W + s * stride + idx));
  kd_epilogue(args, C, row, col, sum.x);
  kd_epilogue(args, C, row + 1, col, sum.y);
  kd_epilogue(args, C, row + 2, col, sum.z);
  kd_epilogue(args, C, row + 3, col, sum.w);
}
__device__ __forceinline__ void kd_sum_partials1(const kd_gemm_args& args, KD_C_T* C, const float* W, long long stride,
                                                 long long idx, long long row, long long col, int S) {
  float sum = 0.f;
#pragma unroll
  for (int s = 0; s < S; ++s) sum += W[s * stride + idx];
  kd_epilogue(args, C, row, col, sum);
}

#if KD_TAIL > 1 || KD_SK
// One tile's S partials summed and stored (the KD_TAIL and KD_SK reductions): grid = [any, tiles,
// batch], blockIdx.x strides over the tile's 4-row column pieces.
__device__ __forceinline__ void kd_sum_tile(const kd_gemm_args& args, long long tile_id, int S) {
  const long long m = args.m, n = args.n, mn = m * n, total = mn * args.batch, z = blockIdx.z;
  const long long tm = (m + kBM - 1) / kBM;
  const long long m0 = tile_id % tm * kBM, n0 = tile_id / tm * KD_BN;
  const float* W = static_cast<const float*>(args.workspace) + z * mn;
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
  for (int q = blockIdx.x * 256 + threadIdx.x; q < kBM / 4 * KD_BN; q += 256 * gridDim.x) {
    const long long row = m0 + 4 * (q % (kBM / 4)), col = n0 + q / (kBM / 4);
    if (row >= m || col >= n) continue;
    const long long idx = row + col * m;
    if (m % 4 == 0)
      kd_sum_partials4(args, C, W, total, idx, row, col, S);
    else
      for (int r = 0; r < 4 && row + r < m; ++r) kd_sum_partials1(args, C, W, total, idx + r, row + r, col, S);
  }
}
#endif

#if KD_SK
// KD_SK: the partials of every tile that more than one CTA covered, summed in CTA order, then the
// epilogue; blockIdx.y is the tile.
extern "C" __global__ void __launch_bounds__(256) kd_wg_sk_reduce(kd_gemm_args args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long tiles = (args.m + kBM - 1) / kBM * ((args.n + KD_BN - 1) / KD_BN);
  const long long ktiles = (args.k + kBK - 1) / kBK, units = tiles * ktiles;
  const long long ts = blockIdx.y * ktiles;
  const long long first = kd_sk_cta(ts, units), last = kd_sk_cta(ts + ktiles - 1, units);
  if (first == last) return;  // written to C by its one CTA
  kd_sum_tile(args, blockIdx.y, static_cast<int>(last - first + 1));
}
#endif

#if KD_TAIL > 1
// KD_TAIL: the split tiles' KD_TAIL partials summed in split order, then the epilogue; blockIdx.y picks
// the tile (the last ones of kd_wg_tiled's order).
extern "C" __global__ void __launch_bounds__(256) kd_wg_tail_reduce(kd_gemm_args args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long tiles = (args.m + kBM - 1) / kBM * ((args.n + KD_BN - 1) / KD_BN);
  kd_sum_tile(args, tiles - gridDim.y + blockIdx.y, KD_TAIL);
}
#endif

// Split-K reduction: the KD_SPLITK partials of every output summed in split order (deterministic),
// then the epilogue. Grid-stride over batch * m * n outputs, m fastest; with m a multiple of 4, four
// rows of one column per thread (16-byte loads of each partial).
extern "C" __global__ void __launch_bounds__(256) kd_wg_tiled_reduce(kd_gemm_args args) {
  // Launched as a programmatic dependent of the main kernel, this waits until its partials are
  // complete and visible; launched normally, it returns at once.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long m = args.m, n = args.n, mn = m * n, total = mn * args.batch;
  const float* W = static_cast<const float*>(args.workspace);
  const long long stride = 256LL * gridDim.x;
  if (m % 4 == 0) {
    for (long long q = blockIdx.x * 256LL + threadIdx.x; 4 * q < total; q += stride) {
      const long long idx = 4 * q, z = idx / mn, rem = idx % mn, row = rem % m, col = rem / m;
      kd_sum_partials4(args, static_cast<KD_C_T*>(args.c) + z * args.stride_c, W, total, idx, row, col, KD_SPLITK);
    }
    return;
  }
  for (long long idx = blockIdx.x * 256LL + threadIdx.x; idx < total; idx += stride) {
    const long long z = idx / mn, rem = idx % mn, row = rem % m, col = rem / m;
    kd_sum_partials1(args, static_cast<KD_C_T*>(args.c) + z * args.stride_c, W, total, idx, row, col, KD_SPLITK);
  }
}
