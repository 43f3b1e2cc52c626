// wg_tiled's producer-load hook: the cp.async copies of one k tile of A and B (and with KD_BLO of B's
// lo parts) into a ring stage, each thread's chunk addresses computed once per tile of C (a plan)
// and advanced per k tile. Part of wg_tiled.cu's translation unit (embedded, and expanded in place like
// wg_common.cuh): reads its constants, its primitives (kd_lt, kd_cp_async16) and B's workspace parts.

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
// WHOLE: every chunk of the plan is whole (kd_whole; inside k, m and n), so no chunk has bounds to
// check (the producer's whole tiles, kd_copy::load_whole).
template <int ITERS, bool WHOLE = false>
__device__ __forceinline__ void kd_load_fast(unsigned dst, const kd_t* X, const kd_chunks& p, long long k0) {
  const kd_t* src = X + p.off + k0 * p.kstride;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    if constexpr (WHOLE) {
      kd_cp_async16(dst + p.dst + i * p.dstep, src + i * p.step);
    } else {
      const bool ok = static_cast<long long>(i) * p.rstep < p.rows_left;
      kd_cp_async16(dst + p.dst + i * p.dstep, ok ? src + i * p.step : X, ok ? p.bytes : 0);
    }
  }
}
// Whether every chunk of the plan's k tile at k0 is whole. (kd_copy::whole_tiles spells out the
// same row terms for two plans: through a shared helper the producer's loops compiled to other code.)
template <int ITERS>
__device__ __forceinline__ bool kd_whole(const kd_chunks& p, long long k0, long long k) {
  return k0 + kBK <= k && p.bytes == 16 && static_cast<long long>(ITERS - 1) * p.rstep < p.rows_left &&
         (ITERS - 1) * p.kstep < kBK - p.kfix;
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

// Whether the producer's main loop copies whole k tiles in a loop of their own (kd_copy::load_whole).
// Not with KD_BLO (its third tile), nor for f16 splits of 128 columns: there the general loader's
// copies, spread by their bounds arithmetic, measured faster (4096 x 512 x 4096, H100, session 34:
// 115.4 against 122.4 us; 4096 x 256: 69.2 against 68.8), as in session 12; 3xTF32 tiles of 128
// columns gained (4096 x 128 x 4096 46.9 -> 44.5 us, 128 x 512 x 512 x32 25.9 -> 24.1) and the narrow
// tiles more (4096 x 32 x 4096, H200: 27.8 -> 23.5 us, with the other changes of that session).
constexpr bool kWholeLoop = !KD_BLO && (KD_BN <= 64 || !KD_F16S);

// The copy plans of a tile of A at row row0 and of B at column col0.
__device__ __forceinline__ kd_chunks kd_plan_a(const kd_gemm_args& args, const long long& m, long long row0) {
  return kF32 && !KD_TA ? kd_plan_kn(args.lda, m, row0) : kd_plan_rows<kBM, !kF32 || KD_A_SWZ>(args.lda, m, row0);
}
__device__ __forceinline__ kd_chunks kd_plan_b(const long long& ldb, const long long& n, long long col0) {
  return kd_plan_rows<KD_BN, true>(ldb, n, col0);
}
// KD_SKB (stream-K over every batch entry): global tile `tile` as its batch entry z and its tile t
// within the entry (tile-major, tm tiles per column of C). I is int in the producer, whose registers
// are few, and long long in the consumers' flush.
template <class I>
struct kd_skb_tile {
  I z, t;
};
template <class I>
__device__ __forceinline__ kd_skb_tile<I> kd_skb_at(I tile, I tm, const long long& n) {
  const I tiles = tm * static_cast<I>((n + KD_BN - 1) / KD_BN), z = tile / tiles;
  return {z, tile - z * tiles};
}
#if KD_TMAL || KD_TMAST
// A 3-D tensor map of f32 (inner, outer, batch), box kBox0 x kBox1 x 1 with swizzle mode kSwizzle (3:
// 128 bytes, 0: none), zero fill past every extent; ld and stride (the batch's) in floats. One entry
// (stride 0 in the args) takes ld x outer: any stride the map accepts serves its single plane. The
// strides go in bytes, or in units of 16 bytes for ptxas up to CUDA 12.6. Built by one warp in the 128
// bytes of shared scratch `tmp` and published to `out` in global memory, as wg_tma's kd_make_map builds
// its 2-D 16-bit maps: KD_TMAST's of C (the flush) and KD_TMAL's of A and B, whose boxes are their
// tiles' layouts in the ring:
// - rows of k (A with ta = T, B with tb = N): 32 floats of k x the tile's rows in the 128-byte swizzle
//   (row r's 16-byte chunk c at c ^ (r % 8));
// - A with ta = N: kBM + 8 floats of m x 32 rows of k, unswizzled: each k row's kBM floats and the 8 after
//   them, which the ring keeps as padding (kALdF32), so that the consumers' fragment reads stay off each
//   other's banks. The 8 are the next tile's rows (read once more, from L2) or zeros past m.
template <int kBox0, int kBox1, int kSwizzle>
__device__ __forceinline__ void kd_make_map3(unsigned tmp, void* out, const void* addr, long long cols, long long rows,
                                             long long batch, long long ld, long long stride, int lane) {
  asm volatile("st.shared.b32 [%0], 0;" ::"r"(tmp + 4 * lane) : "memory");
  __syncwarp();
  if (lane == 0) {
#if __CUDACC_VER_MAJOR__ < 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ <= 6)
    constexpr unsigned long long unit = 16;
#else
    constexpr unsigned long long unit = 1;
#endif
    const unsigned long long s1 = static_cast<unsigned long long>(ld) * 4 / unit;
    const unsigned long long s2 = static_cast<unsigned long long>(batch > 1 ? stride : ld * rows) * 4 / unit;
    asm volatile(
        "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n"
        "tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 2;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, %7;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, %8;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 2, 1;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %2;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %3;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 2, %4;\n"
        "tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %5;\n"
        "tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 1, %6;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 2, 1;\n"
        "tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 7;\n"
        "tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;\n"
        "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], %9;\n"
        "tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;\n" ::"r"(tmp),
        "l"(reinterpret_cast<unsigned long long>(addr)), "r"(static_cast<unsigned>(cols)), "r"(static_cast<unsigned>(rows)),
        "r"(static_cast<unsigned>(batch)), "l"(s1), "l"(s2), "n"(kBox0), "n"(kBox1), "n"(kSwizzle)
        : "memory");
  }
  __syncwarp();
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;" ::"l"(out),
      "r"(tmp)
      : "memory");
}
#endif
#if KD_TMAL
static_assert(kABytesRaw == (KD_TA ? kBM * kBK : kALdF32 * kBK) * 4 && kALdF32 <= 256 && kBBytes == KD_BN * kBK * 4,
              "KD_TMAL: each box is its tile's whole layout in the ring, at most 256 elements a side");
// KD_TMAL: the producer's copies. Its first thread issues a stage's two boxes onto the stage's `landed`
// barrier; kd_ring::publish waits there instead of on cp.async groups.
struct kd_tma_loads {
  unsigned base;
  unsigned char* maps;  // global: A's map, then B's, 128 bytes each
  unsigned landed0;     // the first stage's `landed` barrier
  // Producer warps 0 and 1 build A's and B's maps (scratch: 256 bytes of shared memory no one uses yet).
  __device__ __forceinline__ void build(const kd_gemm_args& args, unsigned scratch, int warp, int lane) const {
    if (warp == 0) {
      if constexpr (KD_TA)
        kd_make_map3<kBK, kBM, 3>(scratch, maps, args.a, args.k, args.m, args.batch, args.lda, args.stride_a, lane);
      else
        kd_make_map3<kALdF32, kBK, 0>(scratch, maps, args.a, args.m, args.k, args.batch, args.lda, args.stride_a, lane);
    } else if (warp == 1) {
      kd_make_map3<kBK, KD_BN, 3>(scratch + 128, maps + 128, args.b, args.k, args.n, args.batch, args.ldb,
                                  args.stride_b, lane);
    }
  }
  // After the producer's barrier: the issuing thread orders both published maps before its copies (the
  // empty bulk group works around a ptxas bug, as wg_tma's kd_map_acquire).
  __device__ __forceinline__ void acquire(int warp, int lane) const {
    if (warp == 0 && lane == 0)
      asm volatile(
          "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n"
          "fence.proxy.tensormap::generic.acquire.gpu [%1], 128;\n"
          "cp.async.bulk.commit_group;\n"
          "cp.async.bulk.wait_group.read 0;" ::"l"(maps),
          "l"(maps + 128)
          : "memory");
  }
  // Stage `slot`: A's box at (k0, r0, z) (ta = N: at (r0, k0, z)) and B's at (k0, c0, z).
  __device__ __forceinline__ void load(int slot, int k0, int r0, int c0, int z) const {
    if ((threadIdx.x & 127) != 0) return;
    const unsigned bar = landed0 + 8 * slot, sa = base + slot * kStageBytes, sb = sa + kABytes;
    // The boxes' bytes: A's is its raw tile (kABytes rounds it up to 1 KB).
    asm volatile("{.reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;}" ::"r"(bar),
                 "n"(kABytesRaw + kBBytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
            sa),
        "l"(maps), "r"(KD_TA ? k0 : r0), "r"(KD_TA ? r0 : k0), "r"(z), "r"(bar)
        : "memory");
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
            sb),
        "l"(maps + 128), "r"(k0), "r"(c0), "r"(z), "r"(bar)
        : "memory");
  }
  // The prologue's stage `slot`: unit u of the CTA's run.
  __device__ __forceinline__ void load_unit(int slot, int u, int ktiles_all, int tm, const long long& n,
                                            long long z) const {
    const int tile = u / ktiles_all, kt = u - tile * ktiles_all;
    const kd_skb_tile<int> et = KD_SKB ? kd_skb_at(tile, tm, n) : kd_skb_tile<int>{0, tile};
    load(slot, kt * kBK, et.t % tm * kBM, et.t / tm * KD_BN, static_cast<int>(z) + et.z);
  }
};
#endif
// Its plans: the entry's offset folded into the element offset, since the operands' base pointers
// stay at entry 0.
__device__ __forceinline__ kd_chunks kd_skb_plan_a(const kd_gemm_args& args, const long long& m, const long long& n,
                                                   int tm, int tile) {
  const kd_skb_tile<int> e = kd_skb_at(tile, tm, n);
  kd_chunks p = kd_plan_a(args, m, static_cast<long long>(e.t % tm) * kBM);
  p.off += e.z * args.stride_a;
  return p;
}
__device__ __forceinline__ kd_chunks kd_skb_plan_b(const kd_gemm_args& args, const long long& ldb, const long long& n,
                                                   int tm, int tile) {
  const kd_skb_tile<int> e = kd_skb_at(tile, tm, n);
  kd_chunks p = kd_plan_b(ldb, n, static_cast<long long>(e.t / tm) * KD_BN);
  p.off += e.z * args.stride_b;
  return p;
}

// Copies of 16-byte chunks per loading thread and k tile: A (f32 ta = N: 32 rows of BM; otherwise BM
// rows of 128 bytes) and B (BN rows of 128 bytes).
KD_HD constexpr int kd_a_iters() { return kF32 && !KD_TA ? kBK * (kBM / 4) / kLoaders : kBM * 8 / kLoaders; }
KD_HD constexpr int kd_b_iters() { return KD_BN * 8 / kLoaders; }

// The producer-load hook: the cp.async copies of a CTA's k tiles into the ring. It refers to the
// kernel's own values (the scheduler's tile and k range, the operands, their plans), as a lambda
// would: load_stage(slot, kt) copies k tile kt of the CTA's tile (every thread with KD_WS = 0, the
// producer warpgroup with KD_WS = 1), load_ab and load_lo its operands and, KD_BLO, B's lo parts;
// stream-K's load_unit(slot, i) copies the CTA's i-th unit with its tile's plans and load_ws(slot,
// kt, qa, qb) k tile kt of the tile whose plans are qa and qb; prologue() the first STAGES-2 tiles.
struct kd_copy {
  const kd_gemm_args& args;
  const unsigned& base;
  const kd_t* const& A;
  const kd_t* const& B;
  const long long& ldb;  // B's row stride and extent in k (KD_F16S copies B's halves instead of B)
  const long long& kb;
  const long long &m, &n, &k;
  const long long &m0, &n0;       // the CTA's tile (not stream-K)
  const kd_chunks &pa, &pb;       // and its plans
  const kd_t* const& Blo;         // KD_BLO: B's lo parts (f32, like B), and their plan
  const kd_chunks& pl;
  const int &u0, &tm, &ktiles_all;  // stream-K: the CTA's first unit, tiles per column, k tiles per tile

  // KD_BLO: a stage's lo tile, after its B tile.
  __device__ __forceinline__ void load_lo(int slot, long long kt) const {
    if constexpr (KD_BLO) {
      const unsigned sl = base + slot * kStageBytes + kABytes + kBBytes;
      const long long k0 = kt * kBK;
      kd_load_edge<kd_b_iters()>(sl, Blo, pl, k0, k);
    }
  }
  // The producer warpgroup's copies of one stage (KD_WS), with the plans of the stage's tile. Stream-K
  // keeps a segment's plans const in the loop that uses them: plans that change inside the loop (at a
  // tile boundary) measured 15-20% slower (kernel lab, H200), as the producer's per-tile path grew.
  __device__ __forceinline__ void load_ws(int slot, long long kt, const kd_chunks& qa, const kd_chunks& qb) const {
    const unsigned sa = base + slot * kStageBytes, sb = sa + kABytes;
    const long long k0 = kt * kBK;
    // Stream-K's narrow tiles: whole k tiles take one add per copy (see load_whole; the check inside
    // the loop would spill the 72 registers of 128-column tiles' producer).
    if constexpr (KD_SK > 0 && KD_BN <= 64) {
      if (kd_whole<kd_a_iters()>(qa, k0, k) && kd_whole<kd_b_iters()>(qb, k0, kb)) {
        kd_load_fast<kd_a_iters(), true>(sa, A, qa, k0);
        kd_load_fast<kd_b_iters(), true>(sb, B, qb, k0);
        return;
      }
    }
    kd_load_edge<kd_a_iters()>(sa, A, qa, k0, k);
    kd_load_edge<kd_b_iters()>(sb, B, qb, k0, kb);
  }
  // The producer warpgroup's copies of a k tile that whole_tiles counted: the plans' chunks with one
  // address add each, where the general loader spends 17 instructions of bounds per copy. On the
  // narrow tiles the producer's issue is what bounds the loop (Nsight Compute, 4096 x 32 x 4096,
  // session 34: 295 instructions per k tile), so the producer's main loop copies the whole tiles in
  // a loop of its own (kWholeLoop), whose registers the general loader's do not add to.
  __device__ __forceinline__ void load_whole(int slot, long long kt) const {
    const unsigned sa = base + slot * kStageBytes, sb = sa + kABytes;
    kd_load_fast<kd_a_iters(), true>(sa, A, pa, kt * kBK);
    kd_load_fast<kd_b_iters(), true>(sb, B, pb, kt * kBK);
  }
  // How many of the k tiles kt_first, kt_first + 1, ... (at most `count`) are whole for every chunk of
  // the tile's plans, as kd_whole: warp-uniform, since the loops around the copies hold the producer's
  // named barrier.
  __device__ __forceinline__ int whole_tiles(long long kt_first, int count) const {
    const bool rows = pa.bytes == 16 && pb.bytes == 16 &&
                      static_cast<long long>(kd_a_iters() - 1) * pa.rstep < pa.rows_left &&
                      static_cast<long long>(kd_b_iters() - 1) * pb.rstep < pb.rows_left;
    if (!__all_sync(0xffffffffu, rows)) return 0;
    const long long w = (k < kb ? k : kb) / kBK - kt_first;
    return w <= 0 ? 0 : (w < count ? static_cast<int>(w) : count);
  }
  // Stream-K: the k tile and plans of the CTA's unit i (a division: the prologue's few tiles only).
  __device__ __forceinline__ void load_unit(int slot, int i) const {
    const int u = u0 + i, t = u / ktiles_all;
    load_ws(slot, u - t * ktiles_all,
            KD_SKB ? kd_skb_plan_a(args, m, n, tm, t) : kd_plan_a(args, m, static_cast<long long>(t % tm) * kBM),
            KD_SKB ? kd_skb_plan_b(args, ldb, n, tm, t) : kd_plan_b(ldb, n, static_cast<long long>(t / tm) * KD_BN));
  }
  // A and B of k tile kt: the fixed plans inside k, the general loaders at its edge.
  __device__ __forceinline__ void load_ab(int slot, long long kt) const {
    const unsigned sa = base + slot * kStageBytes, sb = sa + kABytes;
    const long long k0 = kt * kBK;
    if constexpr (KD_WS) {
      load_ws(slot, kt, pa, pb);
      return;
    }
    if (k0 + kBK <= k) {
      kd_load_fast<kd_a_iters()>(sa, A, pa, k0);
      kd_load_fast<kd_b_iters()>(sb, B, pb, k0);
      return;
    }
    // Here without KD_WS, so without KD_F16S: f32 A with ta = T is swizzled (KD_A_SWZ) like 16-bit A.
    if constexpr (!kF32 || KD_TA)
      kd_load_swz<kBM>(sa, A, args.lda, m, k, m0, k0);
    else
      kd_load_a_kn(sa, reinterpret_cast<const float*>(A), args.lda, m, k, m0, k0);
    kd_load_swz<KD_BN>(sb, B, args.ldb, n, k, n0, k0);
  }
  __device__ __forceinline__ void load_stage(int slot, long long kt) const {
    load_ab(slot, kt);
    load_lo(slot, kt);
  }
  // The loaders' prologue: the CTA's k tiles 0 .. STAGES-3 (of nk, from k tile kt0), one commit
  // group each (empty past the end). KD_F16S: B's halves come from kd_wg_split_b16's grid. KD_BLO:
  // the operands' copies go out first and the lo tiles wait for kd_wg_split_b's grid; group 0 holds
  // every prologue A and B copy, so waiting for tile s's group still covers them.
  __device__ __forceinline__ void prologue(int nk, long long kt0) const {
    if constexpr (KD_F16S) {
      // A's copies go out while kd_wg_split_b16 may still run, B's halves once its grid is complete.
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s)
        if (s < nk) kd_load_edge<kd_a_iters()>(base + s * kStageBytes, A, pa, (kt0 + s) * kBK, k);
      asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s) {
        if (s < nk) kd_load_edge<kd_b_iters()>(base + s * kStageBytes + kABytes, B, pb, (kt0 + s) * kBK, kb);
        kd_cp_commit();
      }
    } else if constexpr (KD_BLO) {
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s)
        if (s < nk) load_ab(s, kt0 + s);
      asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s) {
        if (s < nk) load_lo(s, kt0 + s);
        kd_cp_commit();
      }
    } else if constexpr (KD_SK > 0) {
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s) {
        if (s < nk) load_unit(s, s);
        kd_cp_commit();
      }
    } else {
#pragma unroll
      for (int s = 0; s < KD_STAGES - 2; ++s) {
        if (s < nk) load_stage(s, kt0 + s);
        kd_cp_commit();
      }
    }
  }
};
