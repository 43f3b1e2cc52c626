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
//    memory in split order.
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
//   KD_BETA_ZERO 0|1   KD_BIAS 0|1
// Plan: launch 0 kd_wg_tma: grid = [ceil(n / BN), ceil(m / (64 * WG * MW)), batch * SPLITK],
//   block = [128 * (WG + 1)], smem and workspace (256 bytes per CTA, its two tensor maps) as
//   wg_tma_layout.cuh lays them out.
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

#if KD_TA != 1 || KD_TB != 0
#error "wg_tma: only ta = T, tb = N (k contiguous in A and B)"
#endif
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL) && defined(__CUDA_ARCH__)
#error "wg_tma: needs sm_90a (wgmma, TMA, tensormap.replace)"
#endif

#define KD_CAT2(a, b) a##b
#define KD_CAT(a, b) KD_CAT2(a, b)
#define KD_IS_BF16___nv_bfloat16 1
#if KD_CAT(KD_IS_BF16_, KD_A_T)
#define KD_TMAP_TYPE 10  // the tensor map's element type: .bf16
#else
#define KD_TMAP_TYPE 6  // .f16
#endif

#include "wg_tma_layout.cuh"

typedef KD_A_T kd_t;
static_assert(sizeof(KD_A_T) == 2 && sizeof(KD_B_T) == 2, "wg_tma: 16-bit A and B of one type");
// The named parameters as one layout (wg_tma_layout.cuh: shared memory, workspace), which the host
// rules compile too. The constants below are what the kernel reads; under NVRTC's -default-device
// each is also a __device__ variable of a few bytes in the cubin.
KD_HD constexpr kd_wg_tma_layout kd_layout() { return {KD_WG, KD_MW, KD_BN, KD_STAGES}; }
constexpr int kThreads = kd_layout().threads();
constexpr int kBM = kd_layout().bm();
constexpr int kBK = kd_layout().bk();
constexpr int kAcc = kd_layout().acc();
constexpr int kABytes = kd_layout().a_bytes();
constexpr int kBBytes = kd_layout().b_bytes();
constexpr int kStageBytes = kd_layout().stage_bytes();
static_assert(kStageBytes == kABytes + kBBytes, "a stage: the A tile, then the B tile");
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
                  kd_layout().bars_offset() == KD_STAGES * kStageBytes + 256,
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

  // After the ring: the two 128-byte scratch maps (128-aligned), then the full and empty mbarriers.
  const unsigned maps = base + KD_STAGES * kStageBytes;
  const unsigned bars = maps + 256;
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
      const long long cta = (static_cast<long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      unsigned char* slot = static_cast<unsigned char*>(args.workspace) + cta * 256;
      const kd_t* A = static_cast<const kd_t*>(args.a) + z * args.stride_a;
      const kd_t* B = static_cast<const kd_t*>(args.b) + z * args.stride_b;
      kd_make_map(maps, slot, A, k, m, args.lda, kBM, lane);
      kd_make_map(maps + 128, slot + 128, B, k, n, args.ldb, KD_BN, lane);
      if (lane == 0) {
        kd_map_acquire(slot);
        kd_map_acquire(slot + 128);
        // Ring slot s is refilled for tile i once the consumers retired tile i - STAGES.
        for (int i = 0; i < nk; ++i) {
          if (i >= KD_STAGES) kd_mbar_wait(empty(i), ((i / KD_STAGES) - 1) & 1);
          const unsigned sa = base + (i % KD_STAGES) * kStageBytes;
          const int k0 = static_cast<int>((kt0 + i) * kBK);
          kd_mbar_expect(full(i), kStageBytes);
          kd_tma_load(sa, slot, k0, static_cast<int>(m0), full(i));
          kd_tma_load(sa + kABytes, slot + 128, k0, static_cast<int>(n0), full(i));
        }
      }
      __syncwarp();  // the warp reconverges before the CTA-wide barrier of the cluster path
    }
#if KD_CLUSTER
    kd_bar_sync_all();  // with the consumers' below: every copy landed, the ring is free
    kd_cluster_finish(args, base, z, m0, n0);
#endif
    return;
  }
  if constexpr (kSplitRegs) kd_setmaxnreg_inc<kConsumerRegs>();

  for (int i = 0; i < nk; ++i) {
    kd_mbar_wait(full(i), (i / KD_STAGES) & 1);
    const unsigned sa = base + (i % KD_STAGES) * kStageBytes + wg * KD_MW * 64 * 128;
    const unsigned sb = base + (i % KD_STAGES) * kStageBytes + kABytes;
    kd_wgmma_stage16<kd_t>(acc, sa, sb);
    // Tile i's wgmmas stay in flight; tile i - 1's have retired, so its slot goes back.
    kd_wg_wait<1>();
    if (i > 0 && lane == 0) kd_mbar_arrive(empty(i - 1));
  }
  kd_wg_wait<0>();
#pragma unroll
  for (int mw = 0; mw < KD_MW; ++mw) kd_fence_regs(acc[mw]);

#if KD_CLUSTER
  kd_bar_sync_all();
  float* P = reinterpret_cast<float*>(smem_raw + (base - raw_addr));
  kd_for_each_acc(acc, wg, warp, lane, 0, 0, [&](long long r, long long c, float v) { P[r + c * kBM] = v; });
  kd_cluster_finish(args, base, z, m0, n0);
#else
  KD_C_T* C = static_cast<KD_C_T*>(args.c) + z * args.stride_c;
  kd_for_each_acc(acc, wg, warp, lane, m0, n0,
                  [&](long long r, long long c, float v) { kd_epilogue(args, C, r, c, v); });
#endif
}
