// Family wg_tiled: Hopper warpgroup GEMM (wgmma.mma_async, sm_90a), C = alpha * op(A) op(B)
// (+ beta C) (+ bias[row]), tb = N (k contiguous; tb = T with KD_F16S, whose first launch reads B),
// A and B of one type, f32 accumulation, strided batch.
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
//    (ta = T: one ldmatrix.x4 per k8 step, from swizzled rows; ta = N: scalar loads) is read into
//    registers and split
//    there with hi rounded to nearest (wgmma's
//    register-A form, the mma.sync m16n8k8 fragment per warp); so lo_a (either sign) times lo_b,
//    the dropped term, carries no bias. A k tile's 3 x 4 products (lo*hi, hi*lo, then hi*hi, per
//    k8) chain in a temporary accumulator; every KD_PROMOTE k tiles it is added to the f32 sum with
//    an IEEE FADD (the promotion of ARCHITECTURE.md), after waiting for those wgmmas. With
//    KD_PROMOTE = 2 the second tile's fragments and issue overlap the first tile's wgmmas.
//    KD_LATE = 1 issues the next stage's copies after the tile's wgmmas instead of before.
//    KD_3XTF32 = 0 is plain TF32, B rounded in place (precision=tf32 keys only);
//  - f32, KD_WS = 1 (warp-specialized): one more warpgroup, the producer, copies the k tiles and
//    splits B; the KD_WG consumer warpgroups only run wgmmas. They meet at mbarriers per ring slot
//    and B-lo buffer instead of a CTA barrier per k tile (see the main loop). The producer copies
//    the k tiles whose chunks are all whole in a loop of their own, one address add per copy
//    (kWholeLoop, wg_tiled_copy.cuh), the others with the general loader. KD_WS = 0: every
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
//  - f32, KD_F16S = 1 (strict fp32, ta = T or N, tb = N or T, KD_WS with two consumers of m64n128,
//    or m64n32 and m64n64 for narrow outputs; KD_PROMOTE 1; no BLO, SK or CLUSTER): the same three products on f16 wgmmas, twice TF32's rate. x = (hi + lo) / s,
//    hi and lo f16 rounded to nearest, s a power of two that puts the largest |x| of its group in
//    [2^14, 2^15): a row of A per k tile (the quad holding the row agrees by two shuffles; the
//    promotion is an FFMA by 1 / s), a column of B over all of k. f16's 11 significant bits equal
//    TF32's, so the error matches 3xTF32's; each product is exact in f32. A first launch
//    (kd_wg_split_b16) writes B's hi|lo halves per k tile, one 128-byte row, and 1 / s per column;
//    the producer copies those instead of B. A group whose largest |x| is below 2^-112 loses
//    precision (s is clamped to keep 1 / s normal). ta = N: A's k tile is copied as for 3xTF32 (k
//    rows of BM, padded to BM + 4) and each consumer thread reads its fragment's values there once,
//    splitting them in registers as for ta = T. tb = T: the first launch reads B's rows of n
//    (kd_wg_split_b16 of 32 columns per block) and writes the same halves; the main kernel is the same.
//    With KD_3XTF32 = 0 (precision=tf32 keys only) only hi * hi is computed: one f16 product with
//    the same scales, TF32's 11 significant bits at f16's rate, twice TF32's (issue 30's TF32 class).
//  - KD_SK > 1 (stream-K; f32 with KD_WS and KD_PROMOTE 1, no SPLITK, CLUSTER, TAIL or BLO): KD_SK
//    CTAs each take an equal contiguous run of a batch's tile-major k-tile units. A run is cut into
//    segments at tile boundaries; a tile that one CTA covers whole goes straight to C, the others leave
//    one partial per CTA in the workspace, which a second launch (kd_wg_sk_reduce) sums in CTA order.
//    The producer copies each segment with that tile's plans, so the ring never drains between
//    segments. KD_PP = 1: the two consumers take turns, a segment each, so that one's stores of a
//    finished tile overlap the other's wgmmas (short k only: see the segment loop). KD_TMAST = 1: each
//    consumer finishes its outputs into a 16 KB staging buffer and one thread stores them with TMA
//    stores through C's tensor map, which it builds on the device into its workspace slot.
// Requirements (the host rules check them): sm_90a; lda, ldb (and batch strides) multiples of 16
// bytes' worth of elements, A and B 16-byte aligned; m, n and k free.
//
// Named parameters:
//   KD_A_T, KD_B_T, KD_C_T element types   KD_TA 1 = T (0 = N: f32 only)   KD_TB 0 (1 = T: KD_F16S only)
//   KD_WG warpgroups (1, 2)   KD_MW m64 blocks per warpgroup (1, 2; 1 for f32; MW * BN <= 256)
//   KD_BN 64 | 128 | 256 (f32: 16 with KD_WS | 64 | 128)   KD_STAGES ring depth (3..8; f32 4..8)
//   KD_SPLITK k splits (1..16)   KD_3XTF32 0|1 (f32)   KD_PROMOTE 1|2 (f32)   KD_LATE 0|1 (f32)
//   KD_WS 0|1 (f32; with KD_LATE = 0)   KD_CLUSTER 0|1 (SPLITK 2..8)   KD_BLO 0|1 (f32, 3xTF32, WS)
//   KD_TAIL 1..16 (SPLITK 1, no BLO)   KD_SK 0 | CTAs (2..units)   KD_F16S 0|1   KD_BETA_ZERO 0|1   KD_BIAS 0|1
//   KD_PDL 0|1 (the first launch waits on the previous kernel's grid first, gemm.cuh)
//   KD_SKB 0|1 (with KD_SK: the units run over every batch entry, KD_SK CTAs in all; whole tiles each)
//   KD_PP 0|1 (with KD_SK and two consumers, k <= 64: the consumers take turns, segment by segment)
//   KD_TMAST 0|1 (with KD_SK, whole tiles, f32 C: the outputs through a staging buffer and TMA stores)
// Plan: [KD_BLO = 1: kd_wg_split_b: grid = [any], block = [256]; KD_F16S = 1: kd_wg_split_b16: grid =
//   [batch * n], block = [256] (KD_TB = 1: grid = [batch * ceil(n / 32)], block = [512]); then]
//   kd_wg_tiled: grid = [ceil(m / (64 * WG * MW)), ceil(n / BN), batch * SPLITK] (KD_TAIL: [tiles +
//   split tiles * (TAIL - 1), 1, batch]; KD_SK: [KD_SK, 1, batch], with KD_SKB [KD_SK, 1, 1]),
//   block = [128 * (WG + WS)], pdl with KD_BLO or KD_F16S, smem and workspace as wg_tiled_layout.cuh
//   lays them out; then where partial tiles were left (more than one split without KD_CLUSTER,
//   KD_TAIL, stream-K tiles that span CTAs) the launch that sums them, pdl: kd_wg_tiled_reduce grid
//   [any], kd_wg_tail_reduce grid [any, split tiles, batch] or kd_wg_sk_reduce grid [any, tiles of one
//   batch, batch], block [256].
//
// Structure: one pipeline, kd_wg_tiled below, whose loops call fixed hooks: the producer load
// (kd_copy, wg_tiled_copy.cuh: cp.async copies of a k tile into the ring), the consumer compute
// (kd_consumer, wg_tiled_pipeline.cuh, and the operand policy kd_ops, wg_tiled_operands.cuh, picked
// from the element type, KD_3XTF32 and KD_F16S: 16-bit, 3xTF32 or plain TF32, f16 splits), the ring's
// mbarriers (kd_ring, KD_WS) and the epilogue (wg_tiled_schedule.cuh: the store of a split-K or tail
// CTA, stream-K's segments, the second launches' sums).
// Shared memory, workspace, grids and the tail and stream-K arithmetic: wg_tiled_layout.cuh, which
// the host rules (family_wg_tiled.cpp) compile too. The kernel's own code, its loops and the
// schedulers' arithmetic, stays in the kernel function: moved into a helper, even an inlined one,
// the same source comes out of NVVM as other instructions (other induction variables, a max for a
// select), which tools/dev/kernel_equivalence.py shows. The hooks are what used to be the kernel's
// lambdas and, like lambdas, refer to the kernel's values.
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "wg_defaults.cuh"
#ifndef KD_LATE
#define KD_LATE 0
#endif
#ifndef KD_WS
#define KD_WS 0
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
#ifndef KD_TMAST
#define KD_TMAST 0
#endif
#ifndef KD_SKB
#define KD_SKB 0
#endif
#ifndef KD_PP
#define KD_PP 0
#endif
// KD_TMAL = 1 (stream-K, f32, tb = N, whole tiles per CTA: the host rules): the operands copied
// by the TMA, one thread issuing each stage's two boxes onto a `landed` mbarrier, instead of the
// producer warpgroup's cp.async with bounds arithmetic per 16 bytes. The maps are built per CTA into the
// workspace, 256 bytes a CTA after the TMA stores' slots.
#ifndef KD_TMAL
#define KD_TMAL 0
#endif

#if KD_TB != 0 && !KD_F16S
#error "wg_tiled: only tb = N (tb = T with KD_F16S, whose first launch reads B)"
#endif
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(__CUDA_ARCH__)
#error "wg_tiled: needs sm_90a (wgmma)"
#endif

#include "wg_tiled_layout.cuh"

typedef KD_A_T kd_t;
// The named parameters as one layout (wg_tiled_layout.cuh: shared memory, workspace, plan), which the
// host rules compile too. The constants below are what the kernel reads; under NVRTC's -default-device
// each is also a __device__ variable of a few bytes in the cubin.
KD_HD constexpr kd_wg_tiled_layout kd_layout() {
  return {sizeof(kd_t), KD_TA,  KD_WG,   KD_MW,     KD_BN,      KD_STAGES, KD_WS,
          KD_PROMOTE,   KD_BLO, KD_F16S, KD_SPLITK, KD_CLUSTER, KD_TAIL,   KD_SK, KD_PP, KD_TMAST};
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
// KD_F16S of 32 or 64 columns: the consumers split the next tile's A while the current tile's wgmmas
// run (kernel lab, H200: 4096 x 64 x 4096 29.9 us against 30.9-31.5 in step). With 128 columns the
// same loop measured slower (4096 x 128 x 4096: 40.4-41.3 us against 38.1-38.8; 4096 x 256: 68.3-68.6
// against 63.6-64.3), so those keep the in-step loop.
// Macros, not constants: under NVRTC's -default-device a constant is also a variable in the cubin.
#define KD_AHEAD (KD_F16S && KD_BN <= 64)
// A fragment sets in registers: one per tile whose wgmmas may be in flight (KD_PROMOTE), and two when
// the consumers split ahead.
#define KD_FRAGS (KD_AHEAD ? 2 : KD_PROMOTE)
constexpr int kALdF32 = kd_layout().a_ld_f32();
// f32 A with ta = T (not KD_F16S) in the 128-byte swizzle (wg_tiled_layout.cuh), not in padded rows. A
// macro, as KD_AHEAD: a namespace-scope constant becomes a global of every cubin (-default-device).
#define KD_A_SWZ (kd_layout().a_swz())
constexpr int kABytesRaw = kd_layout().a_bytes_raw();
constexpr int kABytes = kd_layout().a_bytes();
constexpr int kBBytes = kd_layout().b_bytes();
constexpr int kStageBytes = kd_layout().stage_bytes();
constexpr int kLoBufs = kd_layout().lo_bufs();
constexpr int kLoRing = kLoBufs ? kLoBufs : 1;  // a modulus that compiles when there is no ring
constexpr int kBarBytes = kd_layout().bar_bytes();
static_assert(kABytes % 1024 == 0 && kABytes >= kABytesRaw, "A tiles 1024-aligned");
static_assert(!KD_WS || 8 * (2 * KD_STAGES + kLoRing + (KD_TMAL ? KD_STAGES : 0)) <= kBarBytes,
              "the barrier area (KD_WS): full and empty per stage, lofree per B-lo buffer, KD_TMAL's landed");

static_assert(KD_WG == 1 || KD_WG == 2, "KD_WG is 1 or 2");
static_assert(KD_PROMOTE == 1 || KD_PROMOTE == 2, "KD_PROMOTE is 1 or 2");
static_assert(KD_LATE == 0 || KD_LATE == 1, "KD_LATE is 0 or 1");
static_assert(KD_WS == 0 || (KD_WS == 1 && kF32 && !KD_LATE), "KD_WS is 0 or 1 (f32, copies issued by the producer)");
static_assert(KD_MW == 1 || (KD_MW == 2 && !kF32), "KD_MW is 1 (or 2 for 16-bit types)");
static_assert(KD_MW * KD_BN <= 256, "at most 128 accumulator registers per thread");
static_assert(KD_BN == 64 || KD_BN == 128 || (KD_BN == 256 && !kF32) || ((KD_BN == 16 || KD_BN == 32) && kF32 && KD_WS),
              "KD_BN is 64, 128 or 256 (f32: 16 or 32 with KD_WS, 64, 128)");
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
static_assert(!KD_F16S || (kF32 && KD_WS && KD_WG == 2 && (KD_BN == 32 || KD_BN == 64 || KD_BN == 128) &&
                             KD_PROMOTE == 1 && !KD_BLO && !KD_SK && !KD_CLUSTER),
              "KD_F16S: f32, KD_WS with two m64n32, m64n64 or m64n128 consumers, KD_PROMOTE 1, no BLO, SK or CLUSTER");
static_assert(KD_SKB == 0 || (KD_SKB == 1 && KD_SK > 0), "KD_SKB is 0 or 1 (with KD_SK)");
static_assert(KD_PP == 0 || (KD_PP == 1 && KD_SK > 0 && KD_WG == 2), "KD_PP is 0 or 1 (with KD_SK and two consumers)");
static_assert(KD_TMAL == 0 || (KD_SK > 0 && KD_WS && kF32 && KD_TB == 0 && !KD_F16S && !KD_BLO),
              "KD_TMAL: stream-K, warp-specialized, f32 with tb = N");
static_assert(KD_TAIL == 1 || !KD_BLO, "KD_TAIL with KD_BLO spills in the producer (ptxas: 56 bytes)");

// Strict f32 on tensor cores (3xTF32 and the f16 splits) takes back the accumulation's lean toward
// zero (c_epilogue.cuh); plain TF32 (precision=tf32) leans as cuBLAS's TF32 kernels do.
#define KD_UNLEAN (kF32 && KD_3XTF32)
#include "wg_common.cuh"

// The thread's index among the kLoaders copying threads.
__device__ __forceinline__ int kd_lt() { return KD_WS ? static_cast<int>(threadIdx.x) - 128 * KD_WG : threadIdx.x; }

__device__ __forceinline__ void kd_cp_async16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// A whole 16-byte chunk (no zero fill to compute).
__device__ __forceinline__ void kd_cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
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
// KD_PP's turns (ids 3 and 4, the two consumer warpgroups): one arrives, the other waits.
__device__ __forceinline__ void kd_bar_arrive_pp(int id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void kd_bar_sync_pp(int id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }

// KD_F32: whether the element type is float, for the preprocessor: the f32 pipeline names kd_int, whose
// constants a cubin carries (-default-device), and a 16-bit one must not.
#define KD_CAT2(a, b) a##b
#define KD_CAT(a, b) KD_CAT2(a, b)
#define KD_IS_F32_float 1
#if KD_CAT(KD_IS_F32_, KD_A_T)
#define KD_F32 1
#else
#define KD_F32 0
#endif

// A k tile's place in its promotion group, as a type (the hooks' P).
template <int V>
struct kd_int {
  static constexpr int value = V;
};

#include "wg_tiled_operands.cuh"

template <bool C, class A, class B>
struct kd_pick_t {
  using type = A;
};
template <class A, class B>
struct kd_pick_t<false, A, B> {
  using type = B;
};
template <bool C, class A, class B>
using kd_pick = typename kd_pick_t<C, A, B>::type;

// The operand policy of this configuration.
using kd_ops = kd_pick<!kF32, kd_ops_16bit<kd_t>, kd_pick<KD_F16S, kd_ops_f16s, kd_ops_tf32<KD_3XTF32>>>;

#include "wg_tiled_copy.cuh"
#include "wg_tiled_schedule.cuh"
#include "wg_tiled_pipeline.cuh"

// One pipeline: the scheduler's arithmetic, the prologue, the main loops (16-bit in step; f32 in step;
// f32 warp-specialized: producer and consumers, stream-K in segments) and the epilogue, calling the
// hooks above; the loops and the arithmetic stay here (see the top).
extern "C" __global__ void __launch_bounds__(kThreads, 1) KD_CLUSTER_DIMS kd_wg_tiled(kd_gemm_args args) {
#if KD_PDL && !KD_F16S
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  // KD_F16S: kd_wg_split_b16 is the plan's first launch and owes the previous kernel that wait; it
  // lets this grid start only after it (launch_dependents follows its wait), so the operands are
  // complete here, and the prologue waits for its grid before the first copy of B's halves.
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned raw_addr = kd_smem_addr(smem_raw);
  const unsigned base = (raw_addr + 1023u) & ~1023u;
  const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const long long m = args.m, n = args.n, k = args.k;
  // The scheduler (wg_tiled_schedule.cuh): batch entry z, tile (m0, n0), k split (split < 0: the
  // whole tile) out of `parts`; stream-K: the CTA's units [u0, u1) (32-bit: the host rules keep units
  // below 2^31, and the producer needs fewer registers) and the tile of each.
  long long z, m0, n0;
  int split, parts;
  int tm, ktiles_all, units, u0, u1;
  if constexpr (KD_TAIL > 1) {
    z = blockIdx.z;
    const long long tiles_m = (m + kBM - 1) / kBM, tiles = tiles_m * ((n + KD_BN - 1) / KD_BN);
    // kd_wg_tail_whole written out: called, NVVM folds KD_TAIL = 2 into other instructions.
    const long long whole = tiles - (static_cast<long long>(gridDim.x) - tiles) / (KD_TAIL - 1);
    const long long cta = blockIdx.x;
    const long long tile_id = cta < whole ? cta : whole + (cta - whole) / KD_TAIL;
    split = cta < whole ? -1 : static_cast<int>((cta - whole) % KD_TAIL);
    m0 = tile_id % tiles_m * kBM;
    n0 = tile_id / tiles_m * KD_BN;
    parts = split < 0 ? 1 : KD_TAIL;
  } else if constexpr (KD_SK > 0) {
    z = KD_SKB ? 0 : blockIdx.z;
    tm = static_cast<int>((m + kBM - 1) / kBM);
    const int tiles = tm * static_cast<int>((n + KD_BN - 1) / KD_BN);
    ktiles_all = static_cast<int>((k + kBK - 1) / kBK);
    units = tiles * ktiles_all * (KD_SKB ? static_cast<int>(args.batch) : 1);
    u0 = static_cast<int>(kd_wg_sk_begin(blockIdx.x, units, KD_SK));
    u1 = static_cast<int>(kd_wg_sk_begin(blockIdx.x + 1LL, units, KD_SK));
  } else {
    z = blockIdx.z / KD_SPLITK;
    split = static_cast<int>(blockIdx.z % KD_SPLITK);
    m0 = static_cast<long long>(blockIdx.x) * kBM;
    n0 = static_cast<long long>(blockIdx.y) * KD_BN;
    parts = KD_SPLITK;
  }
  // The operands; KD_F16S copies B's halves (kd_wg_split_b16) instead of B.
  const kd_t* A = static_cast<const kd_t*>(args.a) + z * args.stride_a;
  const kd_t* B;
  long long ldb, kb;
  if constexpr (KD_F16S) {
    B = reinterpret_cast<const kd_t*>(kd_b16(args)) + z * n * kd_wg_ld16(k);
    ldb = kd_wg_ld16(k);
    kb = kd_wg_ld16(k);
  } else {
    B = static_cast<const kd_t*>(args.b) + z * args.stride_b;
    ldb = args.ldb;
    kb = k;
  }
  // The CTA's k tiles: [kt0, kt0 + nk) of its tile, or stream-K its units.
  long long kt0;
  int nk;
  if constexpr (KD_SK > 0) {
    nk = u1 - u0;
  } else {
    const long long ktiles = (k + kBK - 1) / kBK;
    const long long per = (ktiles + parts - 1) / parts;
    kt0 = (split < 0 ? 0 : split) * per;
    const long long kt1 = kt0 + per < ktiles ? kt0 + per : ktiles;
    nk = kt1 > kt0 ? static_cast<int>(kt1 - kt0) : 0;
  }
  // The producer-load hook (wg_tiled_copy.cuh), with the plans of the CTA's tile (stream-K: of each
  // segment's) and KD_BLO's lo parts.
  kd_chunks pa, pb, pl;
  const kd_t* Blo;
  if constexpr (!KD_SK) {
    pa = kd_plan_a(args, m, m0);
    pb = kd_plan_b(ldb, n, n0);
  }
  if constexpr (KD_BLO) {
    Blo = reinterpret_cast<const kd_t*>(kd_blo(args)) + z * n * kd_wg_blo_ld(k);
    pl = kd_plan_rows<KD_BN, true>(kd_wg_blo_ld(k), n, n0);
  }
  const kd_copy copy{args, base, A, B, ldb, kb, m, n, k, m0, n0, pa, pb, Blo, pl, u0, tm, ktiles_all};

  if (!KD_TMAL && (!KD_WS || wg == KD_WG)) copy.prologue(nk, kt0);

  float acc[KD_MW][kAcc];
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[mw][i] = 0.f;
  // The operand policy's state (f32): the tile's products, the thread's place in its warp's
  // fragments and its A rows, the A fragments.
  unsigned char* smem = smem_raw + (base - raw_addr);
  float tmp[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) tmp[i] = 0.f;
  const int g = lane >> 2, t = lane & 3;
  const int row = wg * 64 + warp * 16 + g;
  unsigned ahi[KD_FRAGS][4][4];
  unsigned alo[KD_FRAGS][4][4];
  float inv_sa[KD_FRAGS][2] = {};
  kd_ops ops{{acc, smem, base, wg, row, t, tmp, ahi, alo, inv_sa}};

#if !KD_F32
  {
    // 16-bit, every warpgroup in step. Before iteration i, STAGES-2+i groups are committed (tiles
    // 0 .. i+STAGES-3): at most STAGES-3 pending means tile i has landed.
    for (int i = 0; i < nk; ++i) {
      kd_cp_wait<KD_STAGES - 3>();
      kd_fence_async();
      __syncthreads();
      const int next = i + KD_STAGES - 2;
      if (next < nk) copy.load_stage(next % KD_STAGES, kt0 + next);
      kd_cp_commit();
      ops.mma_tile(i);
      kd_wg_wait<1>();
    }
    kd_wg_wait<0>();
#pragma unroll
    for (int mw = 0; mw < KD_MW; ++mw) kd_fence_regs(acc[mw]);
  }
#else
  {
    const unsigned bars = base + KD_STAGES * kStageBytes + kLoBufs * kBBytes;
    const kd_ring ring{bars, ops, lane};
    if constexpr (!KD_WS) {
      if (nk > 0) {
        kd_cp_wait<KD_STAGES - 3>();
        __syncthreads();
        ops.split_tile(0);
      }
    } else {
      ring.init();
      if (wg == KD_WG) {
        // Registers: see kd_ring. The prologue committed tiles 0 .. STAGES-3.
        if constexpr (KD_WG == 2) kd_setmaxnreg_dec<KD_SK ? 96 : 72>();
        if constexpr (KD_SK > 0) {
#if KD_TMAL
          // The maps (producer warps 0 and 1, in B-lo buffer 0 as scratch: no split has run yet), then
          // the prologue's STAGES - 2 tiles.
          const long long ctas = static_cast<long long>(gridDim.x) * gridDim.z;
          unsigned char* maps = static_cast<unsigned char*>(args.workspace) + ctas * KD_WG * 128 +
                                (blockIdx.x + gridDim.x * blockIdx.z) * 256LL;
          const kd_tma_loads tl{base, maps, bars + 8 * (2 * KD_STAGES + kLoRing)};
          tl.build(args, base + KD_STAGES * kStageBytes, warp, lane);
          kd_bar_sync_loaders();
          tl.acquire(warp, lane);
          for (int s = 0; s < KD_STAGES - 2 && s < nk; ++s) tl.load_unit(s, u0 + s, ktiles_all, tm, n, z);
#endif
          // As below, with the copies of unit j = i + STAGES - 2 grouped by the tile they belong to.
          int i = 0;
          for (int j = KD_STAGES - 2; j < nk;) {
            const int u = u0 + j, tile = u / ktiles_all;
            const int e = (tile + 1) * ktiles_all - u0 < nk ? (tile + 1) * ktiles_all - u0 : nk;
#if KD_TMAL
            const kd_skb_tile<int> et = KD_SKB ? kd_skb_at(tile, tm, n) : kd_skb_tile<int>{0, tile};
            const int tz = static_cast<int>(z) + et.z, r0 = et.t % tm * kBM, c0 = et.t / tm * KD_BN;
            for (int kt = u - tile * ktiles_all; j < e; ++j, ++i, ++kt) {
              ring.publish(i);
              ring.refill_wait(j);
              tl.load(j % KD_STAGES, kt * kBK, r0, c0, tz);
            }
#else
            const kd_chunks qa = KD_SKB ? kd_skb_plan_a(args, m, n, tm, tile)
                                        : kd_plan_a(args, m, static_cast<long long>(tile % tm) * kBM),
                            qb = KD_SKB ? kd_skb_plan_b(args, ldb, n, tm, tile)
                                        : kd_plan_b(ldb, n, static_cast<long long>(tile / tm) * KD_BN);
            for (int kt = u - tile * ktiles_all; j < e; ++j, ++i, ++kt) {
              ring.publish(i);
              ring.refill_wait(j);
              copy.load_ws(j % KD_STAGES, kt, qa, qb);
              kd_cp_commit();
            }
#endif
          }
          for (; i < nk; ++i) {
            ring.publish(i);
            kd_cp_commit();
          }
        } else {
          // Iteration i copies k tile i + STAGES - 2: first the whole ones (copy.whole_tiles), then
          // the rest and the drain, with the same ring steps.
          int i = 0;
          if constexpr (kWholeLoop) {
            const int nw = nk > KD_STAGES - 2 ? copy.whole_tiles(kt0 + KD_STAGES - 2, nk - (KD_STAGES - 2)) : 0;
            for (; i < nw; ++i) {
              ring.publish(i);
              const int next = i + KD_STAGES - 2;
              ring.refill_wait(next);
              copy.load_whole(next % KD_STAGES, kt0 + next);
              kd_cp_commit();
            }
          }
          for (; i < nk; ++i) {
            ring.publish(i);
            const int next = i + KD_STAGES - 2;
            if (next < nk) {
              ring.refill_wait(next);
              copy.load_stage(next % KD_STAGES, kt0 + next);
            }
            kd_cp_commit();
          }
        }
        kd_cp_wait<0>();
        if constexpr (KD_CLUSTER) {
          kd_bar_sync_all();  // with the consumers' below: the ring is free for the partial tile
          kd_cluster_finish(args, base, z, m0, n0);
        }
        return;
      }
      if constexpr (KD_WG == 2) kd_setmaxnreg_inc<KD_SK ? 200 : 216>();
    }
    const kd_consumer step{copy, ops, ring, nk, kt0};
    if constexpr (KD_SK > 0) {
      // One segment per pass: its k tiles in the same loop as an unsplit tile's (the compiler
      // unrolls it and overlaps a promotion with the next tile's fragment loads; one loop with the
      // flush inside measured 11% slower, kernel lab, H200), then the flush.
      const kd_stream_k sk{args, acc, wg, warp, lane, z, m, n, tm, ktiles_all, units, u0, u1};
#if KD_TMAST
      // KD_TMAST: C's tensor map, one per consumer warpgroup in its 128-byte workspace slot (the host
      // rules keep ldc and the batch stride multiples of 4 floats); a C not 16-byte aligned, which the
      // TMA cannot address, takes the ordinary stores (a uniform branch).
      static_assert(KD_MW == 1, "KD_TMAST: one m64 block per warpgroup");
      const bool tma_c = (reinterpret_cast<unsigned long long>(args.c) & 15ULL) == 0;
      const unsigned stbuf = base + kd_layout().staging_offset() + wg * 16384;
      void* cmap = static_cast<unsigned char*>(args.workspace) + ((blockIdx.x + gridDim.x * blockIdx.z) * KD_WG + wg) * 128;
      if (tma_c && warp == 0) {
        kd_make_cmap(stbuf, cmap, args, lane);
        if (lane == 0)
          asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n"
                       "cp.async.bulk.commit_group;\n"
                       "cp.async.bulk.wait_group.read 0;" ::"l"(cmap) : "memory");
      }
#endif
      // KD_PP: the two consumers take turns at the tensor cores, a segment each, so that one's stores
      // run while the other's wgmmas do: consumer 1 starts segment s once consumer 0's wgmmas of it
      // retired (barrier 3), consumer 0 starts segment s + 1 once consumer 1's of s retired (barrier 4).
      // Each barrier is arrived at as often as it is waited on. Consumer 0 then finishes a segment
      // before consumer 1 starts it. The producer publishes tile j only once both consumers released
      // tile j - 3's B-lo buffer (kd_ring, three buffers with turns), and before publishing j + 1 it
      // waits for both to release tile j - 2's slot; so a segment of four or more k tiles deadlocks,
      // and one of three did with two B-lo buffers (the GPU gate hung on k = 72): the host rules
      // allow KD_PP for k <= 64. Kernel lab, H200, serving: 512x512x64 x32 19.2 us against 20.1
      // (stream-K, 4 CTAs an entry); 19.0 with the third B-lo buffer.
      int kt = u0 % ktiles_all;
      const int tiles = tm * static_cast<int>((n + KD_BN - 1) / KD_BN);
      kd_sk_cursor cur(u0, tm, ktiles_all, tiles);
      for (int i = 0, s = 0; i < nk; ++s) {
        const int seg = nk - i < ktiles_all - kt ? nk - i : ktiles_all - kt;
        const int e = i + seg;
        if constexpr (KD_PP) {
          if (wg == 1 || s > 0) kd_bar_sync_pp(wg == 0 ? 4 : 3);
        }
        for (; i < e; ++i) step.tile(i, kd_int<0>{}, kd_int<true>{});
        if constexpr (KD_PP) {
          if (wg == 0 || i < nk) kd_bar_arrive_pp(wg == 0 ? 3 : 4);
        }
        if (i == nk) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        ops.forget();
#if KD_TMAST
        if (tma_c)
          sk.flush_tma(cur, stbuf, cmap);
        else
          sk.flush(cur);
#else
        sk.flush(cur);
#endif
        cur.next(tm, ktiles_all, tiles);
        kt = 0;
      }
    } else if constexpr (KD_AHEAD) {
      // One tile ahead: tile i + 1's A is split while tile i's wgmmas run, then tile i is promoted
      // (kd_consumer::ahead). Two tiles per pass, so that each fragment set is a fixed register set.
      if (nk > 0) {
        kd_mbar_wait(ring.full(0), 0);
        ops.split_a<0>(0);
      }
      int i = 0;
      for (; i + 2 <= nk; i += 2) {
        step.ahead(i, kd_int<0>{});
        step.ahead(i + 1, kd_int<1>{});
      }
      if (i < nk) step.ahead(i, kd_int<0>{});
    } else {
      int i = 0;
      for (; i + KD_PROMOTE <= nk; i += KD_PROMOTE) {
        step.tile(i, kd_int<0>{}, kd_int<KD_PROMOTE == 1>{});
        if constexpr (KD_PROMOTE > 1) step.tile(i + 1, kd_int<1>{}, kd_int<KD_PROMOTE == 2>{});
      }
      for (; i < nk; ++i) step.tile(i, kd_int<0>{}, kd_int<true>{});
    }
  }
#endif
  kd_cp_wait<0>();
#if KD_TMAST
  if (wg < KD_WG && warp == 0 && lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif

  if constexpr (!KD_SK)
    kd_store_tile(args, acc, smem_raw + (base - raw_addr), base, wg, warp, lane, z, m, n, split, m0, n0);
}

// The second launches sum partial tiles in slot order (deterministic), then apply the epilogue.
// Launched as programmatic dependents of kd_wg_tiled, they wait until its partials are complete and
// visible; launched normally, the wait returns at once.
#if KD_SK
// Stream-K: the tiles that more than one CTA covered, in CTA order; blockIdx.y is the tile.
extern "C" __global__ void __launch_bounds__(256) kd_wg_sk_reduce(kd_gemm_args args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long tiles = (args.m + kBM - 1) / kBM * ((args.n + KD_BN - 1) / KD_BN);
  const long long ktiles = (args.k + kBK - 1) / kBK, units = tiles * ktiles;
  const long long ts = blockIdx.y * ktiles;
  const long long first = kd_wg_sk_cta(ts, units, KD_SK), last = kd_wg_sk_cta(ts + ktiles - 1, units, KD_SK);
  if (first == last) return;  // written to C by its one CTA
  kd_sum_tile(args, blockIdx.y, static_cast<int>(last - first + 1));
}
#endif

#if KD_TAIL > 1
// KD_TAIL: the split tiles' KD_TAIL partials; blockIdx.y picks the tile (the last ones of
// kd_wg_tiled's order).
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
