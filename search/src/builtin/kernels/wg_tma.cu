// Family wg_tma: Hopper warpgroup GEMM for 16-bit inputs fed by the Tensor Memory Accelerator
// (sm_90a), C = alpha * op(A) op(B) (+ beta C) (+ bias[row]), ta = T and tb = N (k contiguous in
// both), bf16 or f16, f32 accumulation, strided batch.
//  - one producer warp (in a warpgroup of its own, for the register split) issues one TMA copy per
//    operand and k tile into a KD_STAGES-deep ring; KD_WG consumer warpgroups only run wgmmas. They
//    meet at two mbarriers per ring slot: `full` (the copies' bytes landed, counted by the TMA unit)
//    and `empty` (every consumer warp retired the slot's wgmmas);
//  - every k tile is 64 elements (128 bytes) of k; the TMA writes each tile row in the 128-byte
//    swizzle (16-byte chunk c of row r at chunk c ^ (r % 8), tiles 1024-byte aligned), which is the
//    layout the wgmma shared-memory descriptors read k-major. Rows past m or n and elements past k
//    are zero-filled by the TMA unit, so ragged shapes need no edge path;
//  - consumer warpgroup w owns rows [64 * KD_MW * w, 64 * KD_MW * (w + 1)) of the CTA tile and all
//    KD_BN columns: one m64nBNk16 wgmma per m64 block and k16 step, accumulators in registers, the
//    tile's wgmmas in flight while the next tile is awaited;
//  - the tensor maps are built on the device: the kernel contract hands no host-made descriptor in,
//    so the producer warp writes a zeroed map into shared memory, fills every field with
//    tensormap.replace (base address of this batch entry, dims, row stride, box, bf16/f16, 128-byte
//    swizzle, zero fill) and publishes it to the CTA's own 256-byte slot of the workspace with the
//    tensormap proxy release; the TMA reads it after the matching acquire;
//  - KD_SPLITK > 1 (with KD_CLUSTER = 1, 2..8 splits) splits the k tiles over blockIdx.z; the splits
//    of one tile form a thread-block cluster and sum their f32 partials through distributed shared
//    memory in split order. Two splits of two consumer warpgroups at one CTA per SM
//    (KD_PAIR_FINISH): split r finishes warpgroup r's rows, the other CTA's warpgroup r storing its
//    sums into r's shared memory.
// Grid order: n tiles on x (fastest), so the CTAs that share an A tile run together and A is read from
// DRAM once even when the grid is several waves deep.
// Requirements (the host rules check them): sm_90a; lda, ldb (and batch strides) multiples of 8
// elements (16 bytes), A and B 16-byte aligned; m, n, k < 2^31; m, n and k otherwise free.
//
// Named parameters:
//   KD_A_T, KD_B_T, KD_C_T element types (A, B: __nv_bfloat16 or __half)   KD_TA 1   KD_TB 0
//   KD_WG consumer warpgroups (1, 2)   KD_MW m64 blocks per warpgroup (1, 2; MW * BN <= 256)
//   KD_BN 64 | 128 | 256   KD_STAGES ring depth (2..8)   KD_SPLITK k splits (1..8)
//   KD_CLUSTER 0|1 (1 with SPLITK 2..8)   KD_CTAS 1|2 (CTAs per SM the registers are sized for)
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1   KD_PDL 0|1 (KD_SPLIT16: the first launch waits on the previous
//     kernel's grid first, gemm.cuh)
//   KD_SPLIT16 0|1|2: f32 A and B (any KD_TA, KD_TB) through f16 copies, below: 1 the TF32 class,
//     2 strict f32 (hi and lo copies; KD_MW * KD_BN <= 128)   KD_COPY_CLUSTER 1|2|4|8 (KD_SPLIT16:
//     the first launch's cluster size; 1 = no cluster)   KD_SHARED_MAPS 0|1 (KD_SPLIT16: the first
//     launch builds each batch entry's maps; 0: each product CTA builds its own)   KD_COPY_ROWS 8|32
//     (KD_SPLIT16: the rows of a first-launch block of an operand whose rows are contiguous across k)
// Plan: launch 0 kd_wg_tma: grid = [ceil(n / BN), ceil(m / (64 * WG * MW)), batch * SPLITK],
//   block = [128 * (WG + 1)], smem and workspace (256 bytes per CTA, its two tensor maps; 512 and
//   four with KD_SPLIT16 = 2; with KD_SHARED_MAPS the first batch entries' slots hold each entry's
//   maps) as wg_tma_layout.cuh lays them out.
// KD_SPLIT16 (family wg_tma_f32): a TF32-class call computed as one f16 product. Launch 0,
//   kd_wg_tma_split16 (block 256, clusters of KD_COPY_CLUSTER, grid kd_tma16_blocks for op(A) then
//   op(B); "pdl" with KD_PDL = 1, the families' seeds on sm_90), writes op(A)'s rows and op(B)'s
//   columns as k-contiguous f16 copies into the workspace, each row x 2^s
//   with s per row so that its max lies in [2^14, 2^15): f16's 11 significant bits are TF32's, and the
//   scale keeps them for every element within 2^28 of its row's max. Launch 1, kd_wg_tma as a
//   programmatic dependent, multiplies the copies and scales each output by 2^-(s_row + s_col),
//   exactly. The copies cost one read of A and B and a write of half their bytes; the product then
//   runs at f16's rate, twice TF32's, from half the bytes per element.
// KD_SPLIT16 = 2 (family wg_tma_f16s, strict f32): launch 0 also writes each element's rest (x * 2^s
//   - hi, rounded to nearest) as a lo copy; a ring stage carries A hi, A lo, B hi and B lo (four tensor
//   maps per CTA), and each k tile's lo(A) hi(B) + hi(A) lo(B) + hi(A) hi(B) is summed into a second
//   set of accumulators and added to the f32 sums on the CUDA cores, so no truncating tensor-core sum
//   spans more than one k tile; the epilogue takes back the remaining lean (KD_TC_LEAN).
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "wg_defaults.cuh"
#ifndef KD_CTAS
#define KD_CTAS 1
#endif
// Test-only: build and publish the tensor maps, then copy and multiply nothing (C = alpha * 0), so
// a GPU test can compare the maps in the workspace with the driver's encoding without a TMA fault
// ending the context first. The family never sets it.
#ifndef KD_MAP_PROBE
#define KD_MAP_PROBE 0
#endif

// KD_SPLIT16: f32 A and B of any ta and tb in the TF32 class, as f16 copies that a first launch
// (kd_wg_tma_split16) writes into the workspace; family wg_tma_f32.
#ifndef KD_SPLIT16
#define KD_SPLIT16 0
#endif
// KD_SPLIT16: the first launch's cluster size (1, 2, 4, 8), which bounds the blocks a row's k is split
// over (wg_tma_layout.cuh). Records made before the parameter ran clusters of 8.
#ifndef KD_COPY_CLUSTER
#define KD_COPY_CLUSTER 8
#endif
// KD_SPLIT16: the rows of one first-launch row group of an operand whose rows are contiguous across k
// (ta = N's A, tb = T's B): 8 or 32 (wg_tma_layout.cuh). Records made before the parameter used 32.
#ifndef KD_COPY_ROWS
#define KD_COPY_ROWS 32
#endif
#if KD_COPY_ROWS != 8 && KD_COPY_ROWS != 32
#error "KD_COPY_ROWS is 8 or 32"
#endif
// KD_SPLIT16: the first launch builds each batch entry's tensor maps, which every product CTA of that
// entry then uses; 0 (records made before the parameter): each product CTA builds its own.
#ifndef KD_SHARED_MAPS
#define KD_SHARED_MAPS 0
#endif
#if KD_SHARED_MAPS && !KD_SPLIT16
#error "KD_SHARED_MAPS: the maps are built by the first launch of KD_SPLIT16"
#endif
#if !KD_SPLIT16 && (KD_TA != 1 || KD_TB != 0)
#error "wg_tma: only ta = T, tb = N (k contiguous in A and B)"
#endif
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(__CUDA_ARCH__)
#error "wg_tma: needs sm_90a (wgmma, TMA, tensormap.replace)"
#endif

#define KD_CAT2(a, b) a##b
#define KD_CAT(a, b) KD_CAT2(a, b)
#define KD_IS_BF16___nv_bfloat16 1
#if KD_SPLIT16
#define KD_TMAP_TYPE 6  // the f16 copies
typedef __half kd_t;
static_assert(sizeof(KD_A_T) == 4 && sizeof(KD_B_T) == 4, "wg_tma KD_SPLIT16: f32 A and B");
#elif KD_CAT(KD_IS_BF16_, KD_A_T)
#define KD_TMAP_TYPE 10  // the tensor map's element type: .bf16
typedef KD_A_T kd_t;
#else
#define KD_TMAP_TYPE 6  // .f16
typedef KD_A_T kd_t;
#endif

#include "wg_tma_layout.cuh"

static_assert(KD_SPLIT16 || (sizeof(KD_A_T) == 2 && sizeof(KD_B_T) == 2), "wg_tma: 16-bit A and B of one type");
// The named parameters as one layout (wg_tma_layout.cuh: shared memory, workspace), which the host
// rules compile too. The constants below are what the kernel reads; under NVRTC's -default-device
// each is also a __device__ variable of a few bytes in the cubin.
KD_HD constexpr kd_wg_tma_layout kd_layout() { return {KD_WG, KD_MW, KD_BN, KD_STAGES, KD_SPLIT16 == 2}; }
constexpr int kThreads = kd_layout().threads();
constexpr int kBM = kd_layout().bm();
constexpr int kBK = kd_layout().bk();
constexpr int kAcc = kd_layout().acc();
constexpr int kABytes = kd_layout().a_bytes();
constexpr int kBBytes = kd_layout().b_bytes();
constexpr int kStageBytes = kd_layout().stage_bytes();
static_assert(kStageBytes == kd_layout().parts() * (kABytes + kBBytes),
              "a stage: the A tile, then the B tile (with lo parts: A hi, A lo, B hi, B lo)");
static_assert(KD_SPLIT16 >= 0 && KD_SPLIT16 <= 2, "KD_SPLIT16 is 0, 1 or 2");
// Strict f32 promotes each k tile's sum from a second set of accumulators: 2 * MW * BN / 2 registers.
static_assert(KD_SPLIT16 != 2 || KD_MW * KD_BN <= 128, "KD_SPLIT16 = 2: at most 64 accumulators per thread");
static_assert(KD_WG == 1 || KD_WG == 2, "KD_WG is 1 or 2");
static_assert(KD_MW == 1 || KD_MW == 2, "KD_MW is 1 or 2");
static_assert(KD_BN == 64 || KD_BN == 128 || KD_BN == 256, "KD_BN is 64, 128 or 256");
static_assert(KD_MW * KD_BN <= 256, "at most 128 accumulator registers per thread");
static_assert(KD_STAGES >= 2 && KD_STAGES <= 8, "KD_STAGES out of range");
static_assert(KD_SPLITK >= 1 && KD_SPLITK <= 8, "KD_SPLITK is 1..8");
static_assert((KD_CLUSTER == 0 && KD_SPLITK == 1) || (KD_CLUSTER == 1 && KD_SPLITK >= 2),
              "k splits are reduced in a cluster: KD_CLUSTER = 1 exactly when KD_SPLITK > 1");
static_assert(!KD_CLUSTER || kd_layout().partial_tile_fits(), "the partial tile reuses the ring");
static_assert(kd_layout().maps_offset() == KD_STAGES * kStageBytes &&
                  kd_layout().bars_offset() == KD_STAGES * kStageBytes + 256 * kd_layout().parts(),
              "the kernel's scratch maps and mbarriers where wg_tma_layout.cuh puts them");
static_assert(KD_CTAS == 1 || KD_CTAS == 2, "KD_CTAS (CTAs per SM the registers are sized for) is 1 or 2");
// Registers: the launch bound gives every thread 65536 / (threads * CTAS), rounded down to a multiple
// of 8; where that is short (two consumer warpgroups, or two CTAs per SM) the producer warpgroup
// gives most of its share to the consumers (setmaxnreg; multiples of 8, at most 240 here). The
// consumers' increase must fit in what the CTA was launched with: setmaxnreg.inc waits for
// registers the CTA's own warps released, so asking for more hangs (measured on an H200 with two
// consumer warpgroups at two CTAs per SM, before the rounding was counted).
constexpr bool kSplitRegs = KD_WG == 2 || KD_CTAS == 2;
constexpr int kProducerRegs = 40;
constexpr int kLaunchRegs = 65536 / (kThreads * KD_CTAS) / 8 * 8;
constexpr int kConsumerRegsFit = (kLaunchRegs * kThreads - 128 * kProducerRegs) / (128 * KD_WG) / 8 * 8;
constexpr int kConsumerRegs = kConsumerRegsFit > 240 ? 240 : kConsumerRegsFit;

#if KD_SPLIT16
// The KD_SPLIT16 workspace (wg_tma_layout.cuh) of this call.
__device__ __forceinline__ kd_tma16_ws kd_ws16(const kd_gemm_args& args) {
  const long long ctas = static_cast<long long>((args.n + KD_BN - 1) / KD_BN) * ((args.m + kBM - 1) / kBM) *
                         args.batch * KD_SPLITK;
  return kd_tma16_layout(kd_layout().workspace_bytes(ctas), args.batch, args.m, args.n, args.k, KD_SPLIT16 == 2);
}
// 2^e as a float, for e in [-126, 127].
__device__ __forceinline__ float kd_pow2(int e) { return __int_as_float((e + 127) << 23); }
// The output of accumulator v at (row, col) of entry z back at the scale of A and B (exact: a power
// of two); outside the output, v as it is (never stored).
// v, a sum of products of rows and columns scaled by 2^sa and 2^sb, back at their scale.
__device__ __forceinline__ float kd_unscale_by(int sa, int sb, float v) {
  const int e = -(sa + sb), e1 = e / 2;  // two normal powers of two: each product exact, one rounding at most
  return v * kd_pow2(e1) * kd_pow2(e - e1);
}
__device__ __forceinline__ float kd_unscale(const kd_gemm_args& args, const kd_tma16_ws& ws, long long z,
                                            long long row, long long col, float v) {
  if (row >= args.m || col >= args.n) return v;
  const unsigned char* w = static_cast<const unsigned char*>(args.workspace);
  return kd_unscale_by(reinterpret_cast<const int*>(w + ws.sha)[z * args.m + row],
                       reinterpret_cast<const int*>(w + ws.shb)[z * args.n + col], v);
}
// The cluster's sum of a split tile, at the operands' scale, before the epilogue (wg_common.cuh).
#define KD_CLUSTER_VALUE(args, z, row, col, v) kd_unscale(args, kd_ws16(args), z, row, col, v)
#endif
// Strict f32 (KD_SPLIT16 = 2) takes back the tensor cores' lean toward zero (c_epilogue.cuh), as
// wg_tiled's strict kernels do; the TF32 class leans as cuBLAS's TF32 kernels do. A promotion here
// spans a k tile of 64 (12 chained wgmma steps against wg_tiled's 6), and the sums lean further:
// -7.2e-8 for zero-mean inputs and -1.27e-7 for an offset mean (the gate on an H200, session 31), so
// the correction is the middle of that range, leaving at most 3.4e-8 either way over the gate's seeds.
#define KD_UNLEAN (KD_SPLIT16 == 2)
#define KD_TC_LEAN 9.9e-8f

#include "wg_common.cuh"

// The producer's arrival, announcing the bytes the slot's copies will deliver.
__device__ __forceinline__ void kd_mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("{.reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;}" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One TMA copy of the box at (k0, row0) of the map at `map` into shared memory at `dst`, completing
// bytes on the mbarrier `bar`.
__device__ __forceinline__ void kd_tma_load(unsigned dst, const void* map, int k0, int row0, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(map), "r"(k0), "r"(row0), "r"(bar)
      : "memory");
}
// Every thread of the CTA (barrier 1): the producer's and the consumers' paths both reach it.
__device__ __forceinline__ void kd_bar_sync_all() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }

// Two k splits of two consumer warpgroups: CTA (split) r finishes warpgroup r's rows of the tile, and
// warpgroup r of the other CTA sends it its sums. Each sender thread stores its accumulators into the
// finisher's ring (the same thread of the same warpgroup holds the same outputs there, so the layout
// is thread-major and every access conflict-free), and the finisher adds them in registers and stores
// its rows as an unsplit CTA does. Against kd_cluster_finish (partial tiles staged in each CTA's ring,
// read back across the cluster, and summed and stored four outputs at a time): no remote loads, and
// no CTA reads another's shared memory after the second barrier, so none waits for the other to exit.
// One CTA per SM only: sized for two, the finish spills (16 bytes at 80 registers a thread). A macro,
// not a constant: under NVRTC's -default-device a constant is a variable in every cubin.
#define KD_PAIR_FINISH (KD_CLUSTER && KD_SPLITK == 2 && KD_WG == 2 && KD_CTAS == 1)
#if KD_PAIR_FINISH
// The float4 slot of a warpgroup's thread t for its accumulators q .. q + 3 of m64 block mw: thread-major
// within each group of four, so a warp's 32 slots are 512 contiguous bytes.
__device__ __forceinline__ unsigned kd_pair_slot(int mw, int q, int t) {
  return static_cast<unsigned>(((mw * kAcc + q) / 4) * 128 + t);
}
// This thread's accumulators into the same thread's slots of CTA `rank`'s ring at shared address `ring`.
__device__ __forceinline__ void kd_pair_send(const float (&acc)[KD_MW][kAcc], unsigned ring, unsigned rank, int t) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(ring), "r"(rank));
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw)
#pragma unroll
    for (int q = 0; q < kAcc; q += 4)
      asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(remote + 16u * kd_pair_slot(mw, q, t)),
                   "f"(acc[mw][q]), "f"(acc[mw][q + 1]), "f"(acc[mw][q + 2]), "f"(acc[mw][q + 3])
                   : "memory");
}
// The other split's sums (sent by kd_pair_send into this CTA's ring, generic pointer `ring`) added
// after this thread's own: split 0's sum plus split 1's, in either CTA (addition commutes).
__device__ __forceinline__ void kd_pair_add(float (&acc)[KD_MW][kAcc], const float* ring, int t) {
  const float4* in = reinterpret_cast<const float4*>(ring);
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw)
#pragma unroll
    for (int q = 0; q < kAcc; q += 4) {
      const float4 v = in[kd_pair_slot(mw, q, t)];
      acc[mw][q] += v.x;
      acc[mw][q + 1] += v.y;
      acc[mw][q + 2] += v.z;
      acc[mw][q + 3] += v.w;
    }
}
#endif

// A 2-D tensor map over `rows` rows of `cols` 16-bit elements (row stride `ld` elements) at `base`,
// with a box of 64 x box_rows and the 128-byte swizzle, built by one whole warp in the 128-byte
// shared-memory scratch `tmp` and published to `out` (global, 128-aligned). Every field is written:
// the zeroed start holds nothing the TMA reads.
__device__ __forceinline__ void kd_make_map(unsigned tmp, void* out, const void* base, long long cols, long long rows,
                                            long long ld, int box_rows, int lane) {
  asm volatile("st.shared.b32 [%0], 0;" ::"r"(tmp + 4 * lane) : "memory");
  __syncwarp();
  if (lane == 0) {
    const unsigned long long addr = reinterpret_cast<unsigned long long>(base);
    // The row stride in bytes. ptxas up to CUDA 12.6 (PTX ISA 8.5) took it in units of 16 bytes
    // (Triton's device-side descriptors carry the same switch).
#if __CUDACC_VER_MAJOR__ < 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ <= 6)
    const unsigned long long stride = static_cast<unsigned long long>(ld) * 2 / 16;
#else
    const unsigned long long stride = static_cast<unsigned long long>(ld) * 2;
#endif
    asm volatile(
        "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n"
        "tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 1;\n"  // rank - 1
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, 64;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, %2;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %3;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %4;\n"
        "tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %5;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;\n"
        "tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], %6;\n"
        "tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;\n"
        "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 3;\n"  // 128-byte swizzle
        "tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;\n"     // zeros out of bounds
        ::"r"(tmp),
        "l"(addr), "r"(box_rows), "r"(static_cast<unsigned>(cols)), "r"(static_cast<unsigned>(rows)), "l"(stride),
        "n"(KD_TMAP_TYPE)
        : "memory");
  }
  __syncwarp();
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;" ::"l"(
          out),
      "r"(tmp)
      : "memory");
}
// The acquire that orders the published map before this thread's TMA copies. The empty bulk group
// committed and awaited after it works around a ptxas bug that drops a fence the acquire needs
// (Triton's device-side descriptors carry the same two instructions).
__device__ __forceinline__ void kd_map_acquire(const void* map) {
  asm volatile(
      "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n"
      "cp.async.bulk.commit_group;\n"
      "cp.async.bulk.wait_group.read 0;" ::"l"(map)
      : "memory");
}

// The wgmma wrappers (kd_wgmma<T>, kd_wgmma_tf32, kd_wgmma_f16r), written by tools/dev/gen_wgmma.py
// into the build tree and embedded with the kernels.
#include "wg_wgmma.cuh"
#include "wg_stage16.cuh"

#if KD_SPLIT16
// The power of two 2^shift that puts a row's largest magnitude (f32 bits `maxbits`, sign cleared) in
// [2^14, 2^15), so the row's f16 copy keeps TF32's 11 significant bits for every element within 2^28
// of that max; clamped to [-126, 126] (a row of zeros takes 126; an infinite or NaN max flushes the
// row's finite values, and its output is infinite or NaN as cuBLAS's).
__device__ __forceinline__ int kd_f16_shift(unsigned maxbits) {
  const int sh = 141 - static_cast<int>(maxbits >> 23);
  return sh > 126 ? 126 : (sh < -126 ? -126 : sh);
}
__device__ __forceinline__ unsigned kd_cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ unsigned kd_ld_cluster_u32(unsigned addr, unsigned rank) {
  unsigned remote, v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ unsigned kd_abs_bits(float x) { return __float_as_uint(x) & 0x7fffffffu; }
// The max of `mine` (stored by this thread at shared address `addr`, as every thread of the cluster
// stored its own) over the f blocks of this block's row group: ranks first .. first + f - 1.
__device__ __forceinline__ unsigned kd_group_max(unsigned addr, unsigned first, unsigned f) {
  kd_cluster_sync();  // every block's partials are in place
  unsigned mx = 0;
  for (unsigned b = first; b < first + f; ++b) mx = max(mx, kd_ld_cluster_u32(addr, b));
  kd_cluster_sync();  // no block leaves while another still reads its partials
  return mx;
}
__device__ __forceinline__ __half2 kd_scaled_half2(float x, float y, float s) {
  return __floats2half2_rn(x * s, y * s);
}
// The f16 pair of x * s and y * s (hi, to nearest) as a 32-bit word; with lo parts (KD_SPLIT16 = 2)
// also their rests, exact in f32 and rounded to nearest, in `lo`.
__device__ __forceinline__ unsigned kd_split_pair(float x, float y, float s, unsigned& lo) {
  const __half2 h = kd_scaled_half2(x, y, s);
  if constexpr (KD_SPLIT16 == 2) {
    const float2 hf = __half22float2(h);
    const __half2 l = __floats2half2_rn(fmaf(x, s, -hf.x), fmaf(y, s, -hf.y));
    lo = *reinterpret_cast<const unsigned*>(&l);
  }
  return *reinterpret_cast<const unsigned*>(&h);
}

// The k of one of a row's f parts (f a power of two: a shift, not a 64-bit division, whose code this
// launch would fetch cold), rounded up to a multiple of Whole.
template <int Whole>
__device__ __forceinline__ long long kd_part_k(long long k, unsigned f) {
  return (((k + f - 1) >> (__ffs(f) - 1)) + (Whole - 1)) / Whole * Whole;
}

// The first launch's work (wg_tma_layout.cuh): every element is read from DRAM once and held in
// registers until its row's scale is known, the row's max taken over the f blocks that split its k
// through distributed shared memory. (A copy that read each row twice measured 2.1 TB/s on an H200: the
// second reads missed L2.) Scaling is a multiply by 2^s, exact as scalbnf and far cheaper.

// A k-contiguous row g (below grows) by warp w of the block, its chunk [k0, k1) of k: each lane holds
// runs of 4 floats, loaded as one 16-byte access where the row is 16-byte aligned, so a warp access
// is 512 contiguous bytes (issuing one load per float measured 2.5 TB/s on an H200), and stores 4
// halves at once. Chunks longer than the registers hold (k > 8 * 64 * kd_tma16_pairs()) are read twice.
template <typename RowPtr>
__device__ __forceinline__ void kd_split16_kmajor(RowPtr rowp, __half* dst16, __half* dst16lo, long long ld16,
                                                  int* shifts, long long g,
                                                  long long grows, long long k, unsigned f, unsigned part,
                                                  unsigned* partial, unsigned first) {
  constexpr int kRuns = kd_tma16_pairs() / 2;
  const int lane = threadIdx.x & 31;
  const bool in = g < grows;
  const float* src = in ? rowp(g) : nullptr;
  const bool v4 = (reinterpret_cast<unsigned long long>(src) & 15) == 0;
  const long long chunk = kd_part_k<128>(k, f);
  const long long k0 = part * chunk, k1 = k0 + chunk < k ? k0 + chunk : k;
  auto load4 = [&](long long kk) {
    if (v4 && kk + 4 <= k1) return *reinterpret_cast<const float4*>(src + kk);
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (kk < k1) v.x = src[kk];
    if (kk + 1 < k1) v.y = src[kk + 1];
    if (kk + 2 < k1) v.z = src[kk + 2];
    if (kk + 3 < k1) v.w = src[kk + 3];
    return v;
  };
  auto max4 = [](unsigned mx, float4 v) {
    return max(max(max(mx, kd_abs_bits(v.x)), kd_abs_bits(v.y)), max(kd_abs_bits(v.z), kd_abs_bits(v.w)));
  };
  // Held in registers: a chunk of whole 16-byte runs (k0 is a multiple of 128, so every run that starts
  // below k1 ends by it when k1 - k0 is a multiple of 4). The held path is one predicated load and one
  // store per run and nothing else: this launch runs once per SM, so its code is fetched cold, and a
  // fallback beside each unrolled run doubled it (instruction fetch was 40-60% of the rows path's stalls,
  // 1024^3 NN, Nsight Compute, H200, session 38). Other rows take the rolled loops, reading twice.
  const bool held = chunk <= 128 * kRuns && v4 && (k1 - k0) % 4 == 0;
  float4 v[kRuns];
  unsigned mx = 0;
  if (in && held) {
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const long long kk = k0 + 128 * i + 4 * lane;
      v[i] = kk < k1 ? *reinterpret_cast<const float4*>(src + kk) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int i = 0; i < kRuns; ++i) mx = max4(mx, v[i]);
  } else if (in) {
#pragma unroll 1
    for (long long kk = k0 + 4 * lane; kk < k1; kk += 128) mx = max4(mx, load4(kk));
  }
  for (int o = 16; o; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (f > 1) {
    *partial = mx;
    mx = kd_group_max(kd_smem_addr(partial), first, f);
  }
  if (!in) return;
  const int sh = kd_f16_shift(mx);
  const float s = kd_pow2(sh);
  if (part == 0 && lane == 0) shifts[g] = sh;
  __half* dst = dst16 + g * ld16;  // 16-byte aligned rows
  __half* dstlo = dst16lo + g * ld16;
  auto put_whole = [&](long long kk, float4 p) {  // a run that ends by k1
    uint2 lo;
    const uint2 hi = make_uint2(kd_split_pair(p.x, p.y, s, lo.x), kd_split_pair(p.z, p.w, s, lo.y));
    *reinterpret_cast<uint2*>(dst + kk) = hi;
    if constexpr (KD_SPLIT16 == 2) *reinterpret_cast<uint2*>(dstlo + kk) = lo;
  };
  auto put4 = [&](long long kk, float4 p) {
    if (kk + 4 <= k1) {
      put_whole(kk, p);
    } else {
      const float e[4] = {p.x, p.y, p.z, p.w};
      for (int q = 0; q < 4 && kk + q < k1; ++q) {
        const __half h = __float2half_rn(e[q] * s);
        dst[kk + q] = h;
        if constexpr (KD_SPLIT16 == 2) dstlo[kk + q] = __float2half_rn(fmaf(e[q], s, -__half2float(h)));
      }
    }
  };
  if (held) {
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const long long kk = k0 + 128 * i + 4 * lane;
      if (kk < k1) put_whole(kk, v[i]);
    }
  } else {
#pragma unroll 1
    for (long long kk = k0 + 4 * lane; kk < k1; kk += 128) put4(kk, load4(kk));
  }
}

// The rows paths' max of each row over the block's 8 warps (lane `lane` of every warp `w` holds the
// same row) and over the f blocks that split the row group's k.
__device__ __forceinline__ unsigned kd_rows_block_max(unsigned mx, unsigned (*red)[32], int lane, int w, unsigned f,
                                                      unsigned first) {
  red[w][lane] = mx;
  __syncthreads();
  if (w == 0) {
    for (int i = 1; i < 8; ++i) mx = max(mx, red[i][lane]);
    red[0][lane] = mx;
  }
  if (f > 1) return kd_group_max(kd_smem_addr(&red[0][lane]), first, f);
  __syncthreads();
  return red[0][lane];
}

// One 16-byte store. Stored through a uint4 lvalue, a quarter of kd_split16_rows8's held stores became four
// 4-byte stores each (NVVM split them, CUDA 13.0: 4-byte pieces of 8 rows an instruction), and its copies
// took 7.6-7.8 us against 6.6 at 1024^3 NT (H200, session 39).
__device__ __forceinline__ void kd_st16(void* p, const uint4& v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
// Rows r0 .. r0 + 31 (below `rows`; none when r0 < 0, a padding block) whose elements are contiguous
// across rows (element (r, kk) at src[r + kk * ld]), this block taking chunk `part` of k's f in whole
// tiles of 32. Lane l of each warp holds row r0 + l, so every load reads 32 neighbouring rows; warp w
// takes the chunk's tiles w, w + 8, ...; each tile is written as the row's 64 contiguous bytes of
// halves (zeros past k, nothing past the row's ld16).
__device__ __forceinline__ void kd_split16_rows32(const float* src, long long ld, long long r0, long long rows,
                                                  long long k, __half* dst, __half* dstlo, long long ld16, int* shift,
                                                  unsigned (*red)[32], uint4 (*stage)[32][5], unsigned f, unsigned part,
                                                  unsigned first) {
  constexpr int kTiles = kd_tma16_tiles();
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const long long r = r0 + lane;
  const bool in = r0 >= 0 && r < rows;
  const float* col = src + (in ? r : 0);
  const long long chunk = kd_part_k<32>(k, f);
  const long long k0 = part * chunk, k1 = k0 + chunk < k ? k0 + chunk : k;
  const long long t0 = k0 / 32 + w;  // this warp's tiles: t0, t0 + 8, ... while below k1
  auto load_tile = [&](long long kt, float (&v)[32]) {
    const long long kb = kt * 32;
    if (in && kb + 32 <= k) {  // the whole tile: 32 loads in flight
#pragma unroll
      for (int q = 0; q < 32; ++q) v[q] = col[(kb + q) * ld];
    } else {
#pragma unroll
      for (int q = 0; q < 32; ++q) v[q] = in && kb + q < k ? col[(kb + q) * ld] : 0.f;
    }
  };
  const bool held = (chunk / 32 + 7) / 8 <= kTiles;
  float v[kTiles][32];
  unsigned mx = 0;
  if (held) {
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      if ((t0 + 8 * j) * 32 < k1) {
        load_tile(t0 + 8 * j, v[j]);
      } else {
#pragma unroll
        for (int q = 0; q < 32; ++q) v[j][q] = 0.f;
      }
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int q = 0; q < 32; ++q) mx = max(mx, kd_abs_bits(v[j][q]));
  } else {
    for (long long kt = t0; kt * 32 < k1; kt += 8) {
      float t[32];
      load_tile(kt, t);
#pragma unroll
      for (int q = 0; q < 32; ++q) mx = max(mx, kd_abs_bits(t[q]));
    }
  }
  mx = kd_rows_block_max(mx, red, lane, w, f, first);
  if (r0 < 0) return;  // a padding block (the whole block)
  const int sh = kd_f16_shift(mx);
  const float s = kd_pow2(sh);
  if (in && part == 0 && w == 0) shift[lane] = sh;
  // A tile's halves go through the warp's staging rows (stage[0] hi, stage[1] lo; 20 words a row, so
  // neither side conflicts on more than one bank pair), so that each store writes 64 contiguous bytes
  // of 8 rows: storing each lane's own row took 32 scattered 16-byte pieces per instruction, and
  // with the lo copy the rows path ran at 1.4 TB/s (4096^3 ta = N, H200, session 31).
  const int c = lane & 3;
  auto put_tile = [&](long long kt, const float (&t)[32]) {
    const long long kb = kt * 32;
    unsigned h[16], l[16];
#pragma unroll
    for (int q = 0; q < 16; ++q) h[q] = kd_split_pair(t[2 * q], t[2 * q + 1], s, l[q]);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      stage[0][lane][q] = make_uint4(h[4 * q], h[4 * q + 1], h[4 * q + 2], h[4 * q + 3]);
      if constexpr (KD_SPLIT16 == 2) stage[1][lane][q] = make_uint4(l[4 * q], l[4 * q + 1], l[4 * q + 2], l[4 * q + 3]);
    }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const int rr = 8 * it + (lane >> 2);
      if (r0 + rr < rows && kb + 8 * c < k) {
        *reinterpret_cast<uint4*>(dst + rr * ld16 + kb + 8 * c) = stage[0][rr][c];
        if constexpr (KD_SPLIT16 == 2) *reinterpret_cast<uint4*>(dstlo + rr * ld16 + kb + 8 * c) = stage[1][rr][c];
      }
    }
    __syncwarp();  // the staging rows are free for the next tile
  };
  if (held) {
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      if ((t0 + 8 * j) * 32 < k1) put_tile(t0 + 8 * j, v[j]);
  } else {
    for (long long kt = t0; kt * 32 < k1; kt += 8) {
      float t[32];
      load_tile(kt, t);
      put_tile(kt, t);
    }
  }
}
// The 16 bytes of the lane 4 apart (lane ^ 4).
__device__ __forceinline__ uint4 kd_shfl_xor4(uint4 v) {
  return make_uint4(__shfl_xor_sync(0xffffffffu, v.x, 4), __shfl_xor_sync(0xffffffffu, v.y, 4),
                    __shfl_xor_sync(0xffffffffu, v.z, 4), __shfl_xor_sync(0xffffffffu, v.w, 4));
}
// KD_COPY_ROWS = 8: rows r0 .. r0 + 7 as kd_split16_rows32 takes 32. Lane l holds row r0 + l % 8 and,
// of each tile of 32 k, the 8 consecutive k from 8 * (l / 8): every load reads four runs of 32 bytes
// (8 neighbouring rows). Held in registers, a warp's tiles come in neighbouring pairs and every store
// writes 4 rows' 128 contiguous bytes of halves (a pair's), the lanes of rows 0-3 and 4-7 trading
// halves by one shuffle, with no staging: 8 rows' 64 bytes a store (one tile's) took 0.3-0.7 us more at
// 1024^3 (H200, session 39). A block of 8 rows holds four times the k of a block of 32, so where 32-row
// groups are few (m = 1024: 32 groups split in two, against 128 blocks of the other operand) the
// groups are as many and as large as the k-contiguous path's.
__device__ __forceinline__ void kd_split16_rows8(const float* src, long long ld, long long r0, long long rows,
                                                 long long k, __half* dst, __half* dstlo, long long ld16, int* shift,
                                                 unsigned (*red)[32], unsigned f, unsigned part, unsigned first) {
  constexpr int kTiles = 4 * kd_tma16_tiles();  // 64 floats a lane, as the 32-row path
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int rl = lane & 7, q0 = 8 * (lane >> 3);
  const long long r = r0 + rl;
  const bool in = r0 >= 0 && r < rows;
  const float* col = src + (in ? r : 0);
  const long long chunk = kd_part_k<64>(k, f);
  const long long k0 = part * chunk, k1 = k0 + chunk < k ? k0 + chunk : k;
  // The rolled loops' tiles: t0, t0 + 8, ... while below k1. The held path's come in neighbouring pairs:
  // tp, tp + 1, then tp + 16, tp + 17, ...
  const long long t0 = k0 / 32 + w, tp = k0 / 32 + 2 * w;
  auto load_run = [&](long long kt, float (&v)[8]) {
    const long long kb = kt * 32 + q0;
#pragma unroll
    for (int q = 0; q < 8; ++q) v[q] = in && kb + q < k ? col[(kb + q) * ld] : 0.f;
  };
  // Held in registers where every run of 8 that starts below k ends by it: one predicate per run, as
  // kd_split16_kmajor's held path and for the same reason (its code is fetched cold).
  const bool held = (chunk / 32 + 7) / 8 <= kTiles && k % 8 == 0;
  float v[kTiles][8];
  unsigned mx = 0;
  if (held) {
    // Addresses by pointer steps: (kb + q) * ld per load took five 64-bit multiply-adds each.
    const float* p = col + (tp * 32 + q0) * ld;
    const long long pair = 512 * ld, next = 32 * ld;  // the warp's next pair of tiles; its second tile
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const bool run = in && (tp + 16 * (j / 2) + j % 2) * 32 + q0 < k;
      const float* pq = j % 2 ? p + next : p;
#pragma unroll
      for (int q = 0; q < 8; ++q, pq += ld) v[j][q] = run ? *pq : 0.f;
      if (j % 2) p += pair;
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int q = 0; q < 8; ++q) mx = max(mx, kd_abs_bits(v[j][q]));
  } else {
#pragma unroll 1
    for (long long kt = t0; kt * 32 < k1; kt += 8) {
      float t[8];
      load_run(kt, t);
#pragma unroll
      for (int q = 0; q < 8; ++q) mx = max(mx, kd_abs_bits(t[q]));
    }
  }
  mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
  mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
  mx = kd_rows_block_max(mx, red, lane, w, f, first);
  if (r0 < 0) return;  // a padding block (the whole block)
  const int sh = kd_f16_shift(mx);
  const float s = kd_pow2(sh);
  if (in && part == 0 && lane < 8 && w == 0) shift[rl] = sh;
  __half* to = dst + rl * ld16;
  __half* tolo = dstlo + rl * ld16;
  auto split_run = [&](const float (&t)[8], uint4& h, uint4& l) {
    h.x = kd_split_pair(t[0], t[1], s, l.x);
    h.y = kd_split_pair(t[2], t[3], s, l.y);
    h.z = kd_split_pair(t[4], t[5], s, l.z);
    h.w = kd_split_pair(t[6], t[7], s, l.w);
  };
  auto put_run = [&](long long kt, const float (&t)[8]) {
    const long long kb = kt * 32 + q0;
    if (!in || kb >= k) return;  // a run past k holds zeros, as the row's ld16 does not
    uint4 h, l;
    split_run(t, h, l);
    kd_st16(to + kb, h);
    if constexpr (KD_SPLIT16 == 2) kd_st16(tolo + kb, l);
  };
  if (held) {
    // Each store writes 4 rows' 128 contiguous bytes (a pair of tiles) instead of 8 rows' 64: half the
    // requests. Lanes of rows 0-3 and 4-7 trade halves: the lower lanes keep their first tile's and take
    // the partner's (row + 4), the upper lanes keep their second tile's and take the partner's (row - 4).
    const bool upper = rl >= 4;
    __half* row = dst + (rl & 3) * ld16;
    __half* rowlo = dstlo + (rl & 3) * ld16;
    const bool in_a = r0 + (rl & 3) < rows, in_b = r0 + (rl & 3) + 4 < rows;
#pragma unroll
    for (int jp = 0; jp < kTiles / 2; ++jp) {
      // Past this part's k the whole warp stops (below k = 2048 a block holds fewer tiles than its
      // registers: at 1024, half).
      if ((tp + 16 * jp) * 32 >= k1) break;
      const long long kb = (tp + 16 * jp) * 32 + q0 + (upper ? 32 : 0);  // this lane's stores' run
      uint4 h0, l0, h1, l1;
      split_run(v[2 * jp], h0, l0);
      split_run(v[2 * jp + 1], h1, l1);
      uint4 xh = upper ? h0 : h1, xl = upper ? l0 : l1;  // what the partner stores
      xh = kd_shfl_xor4(xh);
      if constexpr (KD_SPLIT16 == 2) xl = kd_shfl_xor4(xl);
      if (kb >= k1) continue;  // past this part's k (a run past k holds zeros, as the row's ld16 does not)
      if (in_a) {  // rows 0-3
        kd_st16(row + kb, upper ? xh : h0);
        if constexpr (KD_SPLIT16 == 2) kd_st16(rowlo + kb, upper ? xl : l0);
      }
      if (in_b) {  // rows 4-7
        kd_st16(row + 4 * ld16 + kb, upper ? h1 : xh);
        if constexpr (KD_SPLIT16 == 2) kd_st16(rowlo + 4 * ld16 + kb, upper ? l1 : xl);
      }
    }
  } else {
#pragma unroll 1
    for (long long kt = t0; kt * 32 < k1; kt += 8) {
      float t[8];
      load_run(kt, t);
      put_run(kt, t);
    }
  }
}
// Launch 0 of a KD_SPLIT16 plan: op(A)'s rows, then op(B)'s columns, as scaled f16 copies
// (wg_tma_layout.cuh's kd_tma16_ws). kd_wg_tma runs as its programmatic dependent.
// Registers capped for two blocks per SM. Uncapped, a block holding whole rows took so many that
// the rows path ran one block per SM: its copies took 113 us at 4096^3 NN against 85 capped, and 29.5
// against 24.1 at 2048^3 NN (H200, session 32). The k-contiguous path ran the same; neither spills.
// A cluster only as large as the k splits need (KD_COPY_CLUSTER, set by the host rules): a cluster launch
// costs about 2 us more than a plain one (1024^3 TN: 7.3 against 5.1 us, H200, session 37).
#if KD_COPY_CLUSTER > 1
#define KD_COPY_CLUSTER_DIMS __cluster_dims__(KD_COPY_CLUSTER, 1, 1)
#else
#define KD_COPY_CLUSTER_DIMS
#endif
extern "C" __global__ void __launch_bounds__(256, 2) KD_COPY_CLUSTER_DIMS kd_wg_tma_split16(kd_gemm_args args) {
#if KD_PDL
  KD_GRID_DEPENDENCY_WAIT();  // first in the kernel: the launch may overlap the previous kernel
#endif
  // After that wait, so that the product, which may start only once every block of this grid got
  // here, inherits it: the previous kernel has completed before the product writes C.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#if KD_SHARED_MAPS
  // Each batch entry's maps, once per call, in the map slot of its index (the product CTAs of entry z
  // read slot z after their wait on this grid): a product CTA that builds its own maps does so on the
  // call's critical path whenever it starts after the copies, as most do (1024^3 TN: 19.4 against 17.5
  // us, H200, session 37).
  __shared__ __align__(128) unsigned char map_tmp[256 * kd_layout().parts()];
  if (threadIdx.x < 32) {
    const kd_tma16_ws ws = kd_ws16(args);
    const unsigned char* w = static_cast<const unsigned char*>(args.workspace);
    const unsigned tmp = kd_smem_addr(map_tmp);
    const int lane = static_cast<int>(threadIdx.x);
    constexpr int kParts = kd_layout().parts();
    for (long long z = blockIdx.x; z < args.batch; z += gridDim.x) {
      unsigned char* slot = static_cast<unsigned char*>(args.workspace) + z * kd_layout().map_bytes();
      const kd_t* A = reinterpret_cast<const kd_t*>(w + ws.a16) + z * args.m * ws.ld16;
      const kd_t* B = reinterpret_cast<const kd_t*>(w + ws.b16) + z * args.n * ws.ld16;
      kd_make_map(tmp, slot, A, args.k, args.m, ws.ld16, kBM, lane);
      kd_make_map(tmp + 128 * kParts, slot + 128 * kParts, B, args.k, args.n, ws.ld16, KD_BN, lane);
#if KD_SPLIT16 == 2
      kd_make_map(tmp + 128, slot + 128, reinterpret_cast<const kd_t*>(w + ws.a16lo) + z * args.m * ws.ld16, args.k,
                  args.m, ws.ld16, kBM, lane);
      kd_make_map(tmp + 384, slot + 384, reinterpret_cast<const kd_t*>(w + ws.b16lo) + z * args.n * ws.ld16, args.k,
                  args.n, ws.ld16, KD_BN, lane);
#endif
    }
  }
#endif
  __shared__ unsigned red[8][32];  // rows contiguous across k: per warp and row
  __shared__ unsigned part_max[8];  // k-contiguous rows: per row (warp)
#if KD_COPY_ROWS == 32
  __shared__ uint4 stage[8][KD_SPLIT16][32][5];  // rows contiguous across k: per warp, hi (and lo)
#endif
  const kd_tma16_ws ws = kd_ws16(args);
  unsigned char* w = static_cast<unsigned char*>(args.workspace);
  const long long m = args.m, n = args.n, k = args.k;
  const long long blocks_a = kd_tma16_blocks(KD_TA == 1, args.batch, m, k, KD_COPY_CLUSTER, KD_COPY_ROWS);
  const bool is_a = blockIdx.x < blocks_a;
  const long long b = is_a ? blockIdx.x : blockIdx.x - blocks_a;  // blocks_a is whole clusters
  // op(A) row i of entry z is k-contiguous when ta = T (A stored k x m), row-contiguous when ta = N;
  // op(B) column j is k-contiguous when tb = N, row-contiguous when tb = T.
  const bool kmajor = is_a ? KD_TA == 1 : KD_TB == 0;
  const long long rows = is_a ? m : n, ld = is_a ? args.lda : args.ldb;
  const long long stride = is_a ? args.stride_a : args.stride_b;
  const float* base = static_cast<const float*>(is_a ? args.a : args.b);
  __half* dst16 = reinterpret_cast<__half*>(w + (is_a ? ws.a16 : ws.b16));
  __half* dst16lo = reinterpret_cast<__half*>(w + (is_a ? ws.a16lo : ws.b16lo));  // KD_SPLIT16 = 2
  int* shifts = reinterpret_cast<int*>(w + (is_a ? ws.sha : ws.shb));
  // This block's row group and its part of k; the group's f blocks are neighbours in one cluster.
  const unsigned f = static_cast<unsigned>(kd_tma16_ksplit(kmajor, k, KD_COPY_CLUSTER, KD_COPY_ROWS));
  // f is a power of two, and the grid is below 2^31 blocks (the host rules): no 64-bit divisions, whose
  // code this launch would fetch cold.
  const long long group = b >> (__ffs(f) - 1);
  const unsigned part = static_cast<unsigned>(b) & (f - 1), first = kd_cluster_rank() & ~(f - 1);
  const long long groups = kd_tma16_groups(kmajor, args.batch, rows, KD_COPY_ROWS);
  if (kmajor) {
    const int warp = threadIdx.x >> 5;
    kd_split16_kmajor([&](long long g) { return g < rows ? base + g * ld : base + g / rows * stride + g % rows * ld; },
                      dst16, dst16lo, ws.ld16,
                      shifts,
                      group * 8 + warp, args.batch * rows, k, f, part, &part_max[warp], first);
  } else {
    const unsigned per = static_cast<unsigned>((rows + KD_COPY_ROWS - 1) / KD_COPY_ROWS);
    const long long z = static_cast<unsigned>(group) / per;  // groups < 2^31
    const long long r0 =
        group < groups ? static_cast<long long>(static_cast<unsigned>(group) % per) * KD_COPY_ROWS : -1;
    const long long at = (z * rows + (r0 < 0 ? 0 : r0)) * ws.ld16;
#if KD_COPY_ROWS == 32
    kd_split16_rows32(base + z * stride, ld, r0, rows, k, dst16 + at, dst16lo + at, ws.ld16,
                      shifts + z * rows + (r0 < 0 ? 0 : r0), red, stage[threadIdx.x >> 5], f, part, first);
#else
    kd_split16_rows8(base + z * stride, ld, r0, rows, k, dst16 + at, dst16lo + at, ws.ld16,
                     shifts + z * rows + (r0 < 0 ? 0 : r0), red, f, part, first);
#endif
  }
}
#endif

extern "C" __global__ void __launch_bounds__(kThreads, KD_CTAS) KD_CLUSTER_DIMS kd_wg_tma(kd_gemm_args args) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const unsigned raw_addr = kd_smem_addr(smem_raw);
  const unsigned base = (raw_addr + 1023u) & ~1023u;
  const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const long long m = args.m, n = args.n, k = args.k;
  const long long z = blockIdx.z / KD_SPLITK;
  const int split = static_cast<int>(blockIdx.z % KD_SPLITK);
  const long long n0 = static_cast<long long>(blockIdx.x) * KD_BN;
  const long long m0 = static_cast<long long>(blockIdx.y) * kBM;

  const long long ktiles = (k + kBK - 1) / kBK;
  const long long per = (ktiles + KD_SPLITK - 1) / KD_SPLITK;
  const long long kt0 = split * per;
  const long long kt1 = kt0 + per < ktiles ? kt0 + per : ktiles;
  const int nk = !KD_MAP_PROBE && kt1 > kt0 ? static_cast<int>(kt1 - kt0) : 0;

  // After the ring: the 128-byte scratch maps (two, or four with lo parts; 128-aligned), then the full
  // and empty mbarriers.
  const unsigned maps = base + KD_STAGES * kStageBytes;
  const unsigned bars = maps + static_cast<unsigned>(kd_layout().map_bytes());
  auto full = [&](int i) { return bars + 8 * (i % KD_STAGES); };
  auto empty = [&](int i) { return bars + 8 * (KD_STAGES + i % KD_STAGES); };
  if (threadIdx.x == 0) {
    for (int s = 0; s < KD_STAGES; ++s) {
      kd_mbar_init(full(s), 1);
      kd_mbar_init(empty(s), 4 * KD_WG);
    }
    kd_mbar_fence_init();
  }
  __syncthreads();

  float acc[KD_MW][kAcc];
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[mw][i] = 0.f;

  if (wg == KD_WG) {
    if constexpr (kSplitRegs) kd_setmaxnreg_dec<kProducerRegs>();
    if (warp == 0) {
#if KD_SHARED_MAPS
      // Entry z's maps, built by the first launch (read past the wait on its grid below).
      unsigned char* slot = static_cast<unsigned char*>(args.workspace) + z * kd_layout().map_bytes();
#else
      const long long cta = (static_cast<long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      unsigned char* slot = static_cast<unsigned char*>(args.workspace) + cta * kd_layout().map_bytes();
#endif
      constexpr int kParts = kd_layout().parts();
#if !KD_SHARED_MAPS
#if KD_SPLIT16
      const kd_tma16_ws ws = kd_ws16(args);
      const unsigned char* w = static_cast<const unsigned char*>(args.workspace);
      const kd_t* A = reinterpret_cast<const kd_t*>(w + ws.a16) + z * m * ws.ld16;
      const kd_t* B = reinterpret_cast<const kd_t*>(w + ws.b16) + z * n * ws.ld16;
      const long long lda = ws.ld16, ldb = ws.ld16;
#else
      const kd_t* A = static_cast<const kd_t*>(args.a) + z * args.stride_a;
      const kd_t* B = static_cast<const kd_t*>(args.b) + z * args.stride_b;
      const long long lda = args.lda, ldb = args.ldb;
#endif
      // The maps: A's, B's; with lo parts A hi, A lo, B hi, B lo (the order of a stage's tiles).
      kd_make_map(maps, slot, A, k, m, lda, kBM, lane);
      kd_make_map(maps + 128 * kParts, slot + 128 * kParts, B, k, n, ldb, KD_BN, lane);
#if KD_SPLIT16 == 2
      kd_make_map(maps + 128, slot + 128, reinterpret_cast<const kd_t*>(w + ws.a16lo) + z * m * ws.ld16, k, m, lda,
                  kBM, lane);
      kd_make_map(maps + 384, slot + 384, reinterpret_cast<const kd_t*>(w + ws.b16lo) + z * n * ws.ld16, k, n, ldb,
                  KD_BN, lane);
#endif
#endif  // !KD_SHARED_MAPS
#if KD_SPLIT16
      // A programmatic dependent of kd_wg_tma_split16, which reads nothing this kernel writes and
      // writes the copies and shifts (and with KD_SHARED_MAPS the maps): this CTA's own maps
      // (addresses only) are built while it runs, and the copies and shared maps are read only past
      // this wait. The consumers read the shifts after tiles that the TMA loaded past it (their full
      // barriers order them); the wait makes the whole grid see the copies.
      asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
      if (lane == 0) {
        for (int j = 0; j < 2 * kParts; ++j) kd_map_acquire(slot + 128 * j);
        // Ring slot s is refilled for tile i once the consumers retired tile i - STAGES.
        for (int i = 0; i < nk; ++i) {
          if (i >= KD_STAGES) kd_mbar_wait(empty(i), ((i / KD_STAGES) - 1) & 1);
          const unsigned sa = base + (i % KD_STAGES) * kStageBytes;
          const int k0 = static_cast<int>((kt0 + i) * kBK);
          kd_mbar_expect(full(i), kStageBytes);
          for (int j = 0; j < kParts; ++j) {
            kd_tma_load(sa + j * kABytes, slot + 128 * j, k0, static_cast<int>(m0), full(i));
            kd_tma_load(sa + kParts * kABytes + j * kBBytes, slot + 128 * (kParts + j), k0, static_cast<int>(n0),
                        full(i));
          }
        }
      }
      __syncwarp();  // the warp reconverges before the CTA-wide barrier of the cluster path
    }
#if KD_PAIR_FINISH
    kd_cluster_sync();  // with the consumers' two below
    kd_cluster_sync();
#elif KD_CLUSTER
    kd_bar_sync_all();  // with the consumers' below: every copy landed, the ring is free
    kd_cluster_finish(args, base, z, m0, n0);
#endif
    return;
  }
  if constexpr (kSplitRegs) kd_setmaxnreg_inc<kConsumerRegs>();
#if KD_SPLIT16 && !KD_CLUSTER
  // No k tile (never with k >= 1 and one split): nothing orders the epilogue's shift reads after
  // the producer's wait, so wait here.
  if (nk == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#if KD_SPLIT16 && (!KD_CLUSTER || KD_PAIR_FINISH)
  // The shifts of this thread's 2 * KD_MW output rows and KD_BN / 4 columns, for the epilogue. Read
  // into registers before the first store: the stores to C might alias the workspace as far as the
  // compiler knows, so reading them per output (kd_unscale) loaded two for every output, one after
  // another (2048^3 strict: 5% of the call, H200, session 32). With 128 accumulators the columns'
  // would take too many registers, so the epilogue reads those a pair per 8 columns. And read as the
  // first k tile's products start, not after the last: read after the loop, their round trip sat
  // between the last products and the first store (strict 1024^3, the whole call: TN 17.9 -> 16.2 us,
  // NT 19.3 -> 17.7, kernel lab, serving regime, H200, session 41). Tile 0's full barrier orders them
  // after the producer's wait on the copies' grid, as it orders every later tile's copies; with no k
  // tile the epilogue reads them, after the wait above (or, with a cluster, after its barrier).
  constexpr bool kAllCols = KD_MW * KD_BN <= 128;
  int srow[KD_MW][2], scol[kAllCols ? KD_BN / 8 : 1][2];
  // KD_BIAS: the rows' biases, read with the shifts for the same reason: kd_epilogue read one per
  // output after the store before it (1024 x 4096 x 1024 with bias 56.4-56.9 -> 55.2-56.0 us, 1024^3
  // 16.9 -> 16.4, kernel lab, serving regime, H200, session 41).
  float brow[KD_MW][2];
  const int* shb = nullptr;
  auto read_shifts = [&]() {
    const kd_tma16_ws ws = kd_ws16(args);
    const unsigned char* w = static_cast<const unsigned char*>(args.workspace);
    const int* sha = reinterpret_cast<const int*>(w + ws.sha) + z * m;
    shb = reinterpret_cast<const int*>(w + ws.shb) + z * n;
    kd_for_each_acc_at(acc, wg, warp, lane, m0, n0, [&](int mw, int j, int q, long long r, long long c, float) {
      if (j == 0 && (q & 1) == 0) {
        srow[mw][q >> 1] = r < m ? sha[r] : 0;
        brow[mw][q >> 1] = r < m ? kd_bias_of<KD_C_T>(args, r) : 0.f;
      }
      if (kAllCols && mw == 0 && q < 2) scol[kAllCols ? j : 0][q] = c < n ? shb[c] : 0;
    });
  };
  if (nk > 0) {
    kd_mbar_wait(full(0), 0);
    read_shifts();
  }
#endif

#if KD_SPLIT16 == 2
  // Strict f32: per k tile, lo(A) hi(B) + hi(A) lo(B) + hi(A) hi(B) into tmp from zero (the small
  // products first), then tmp added to acc by the CUDA cores, rounding to nearest: the tensor cores'
  // truncating sums never span more than one k tile. The other consumer warpgroup's wgmmas keep the
  // tensor pipe busy while this one waits and adds.
  // Tile i's three products into t, from zero, committed as one group.
  auto products = [&](int i, float (&t)[KD_MW][kAcc]) {
    kd_mbar_wait(full(i), (i / KD_STAGES) & 1);
    const unsigned st = base + (i % KD_STAGES) * kStageBytes;
    const unsigned sa = st + wg * KD_MW * 64 * 128, sb = st + 2 * kABytes;
    kd_wg_fence();
    kd_wgmma_steps16<kd_t>(t, sa + kABytes, sb, 0);  // lo(A) hi(B), from zero
    kd_wgmma_steps16<kd_t>(t, sa, sb + kBBytes, 1);  // hi(A) lo(B)
    kd_wgmma_steps16<kd_t>(t, sa, sb, 1);            // hi(A) hi(B)
    kd_wg_commit();
  };
  // Tile i's sum (retired) into acc, its ring slot back to the producer.
  auto promote = [&](int i, float (&t)[KD_MW][kAcc]) {
    if (lane == 0) kd_mbar_arrive(empty(i));
#pragma unroll
    for (int mw = 0; mw < KD_MW; ++mw) {
      kd_fence_regs(t[mw]);
#pragma unroll
      for (int q = 0; q < kAcc; ++q) acc[mw][q] += t[mw][q];
    }
  };
  // (A second set of sums, tile i's wgmmas in flight while tile i - 1's is added, makes ptxas
  // serialize every wgmma: C7514, non-wgmma instructions reading accumulators of a wgmma in flight.)
  float tmp[KD_MW][kAcc];
  for (int i = 0; i < nk; ++i) {
    products(i, tmp);
    kd_wg_wait<0>();
    promote(i, tmp);
  }
#else
  for (int i = 0; i < nk; ++i) {
    kd_mbar_wait(full(i), (i / KD_STAGES) & 1);
    const unsigned sa = base + (i % KD_STAGES) * kStageBytes + wg * KD_MW * 64 * 128;
    const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
    kd_wgmma_stage16<kd_t>(acc, sa, sb);
    // Tile i's wgmmas stay in flight; tile i - 1's have retired, so its slot goes back.
    kd_wg_wait<1>();
    if (i > 0 && lane == 0) kd_mbar_arrive(empty(i - 1));
  }
#endif
  kd_wg_wait<0>();
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw) kd_fence_regs(acc[mw]);

#if KD_CLUSTER && !KD_PAIR_FINISH
  kd_bar_sync_all();
  float* P = reinterpret_cast<float*>(smem_raw + (base - raw_addr));
  kd_for_each_acc(acc, wg, warp, lane, 0, 0, [&](long long r, long long c, float v) { P[r + c * kBM] = v; });
  kd_cluster_finish(args, base, z, m0, n0);
#else
#if KD_PAIR_FINISH
  // The first barrier: both CTAs' copies landed and wgmmas retired, so both rings are
  // free; the producers' copy-grid wait also precedes it, which orders the epilogue's shift reads.
  kd_cluster_sync();
  if (wg != split) kd_pair_send(acc, base, static_cast<unsigned>(wg), threadIdx.x & 127);
  kd_cluster_sync();  // the sums arrived
  if (wg != split) return;
  kd_pair_add(acc, reinterpret_cast<const float*>(smem_raw + (base - raw_addr)), threadIdx.x & 127);
#endif
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
#if KD_SPLIT16
  if (nk == 0) read_shifts();  // the shifts, read above when there was a k tile
  kd_for_each_acc_at(acc, wg, warp, lane, m0, n0, [&](int mw, int j, int q, long long r, long long c, float v) {
    if (!kAllCols && q < 2) scol[0][q] = c < n ? shb[c] : 0;
    kd_epilogue_biased(args, C, r, c, kd_unscale_by(srow[mw][q >> 1], scol[kAllCols ? j : 0][q & 1], v),
                       brow[mw][q >> 1]);
  });
#else
  kd_for_each_acc(acc, wg, warp, lane, m0, n0,
                  [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
#endif
#endif
}
