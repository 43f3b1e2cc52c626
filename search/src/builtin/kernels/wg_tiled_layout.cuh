// What the wg_tiled kernel (wg_tiled.cu) and its host rules (family_wg_tiled.cpp) must agree on: the
// CTA's shared memory, the workspace, the launch grids and the tail and stream-K decompositions.
// Compiled by both sides: NVRTC and nvcc as part of the rendered source (an embedded file, like the
// kernels), the host compiler as builtin/kernels/wg_tiled_layout.cuh. Plain C++17 without CUDA types;
// every function is inline, so that nothing reaches a cubin that does not use it.
#ifndef KD_WG_TILED_LAYOUT_CUH
#define KD_WG_TILED_LAYOUT_CUH

#include "host_device.cuh"

KD_HD constexpr long long kd_ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The named parameters of a configuration (the KD_* macros of wg_tiled.cu) that fix its layout, and
// what follows from them. Sizes in bytes unless named otherwise.
struct kd_wg_tiled_layout {
  long long elem;                     // bytes per element of A and B: 4 (f32) or 2 (bf16, f16)
  long long ta;                       // KD_TA: 1 when op(A) = A^T (k contiguous in A); KD_TB is not
                                      // here: it changes only KD_F16S's first launch
  long long wg, mw, bn, stages;       // KD_WG, KD_MW, KD_BN, KD_STAGES
  long long ws, promote, blo, f16s;   // KD_WS, KD_PROMOTE, KD_BLO, KD_F16S
  long long splitk, cluster, tail;    // KD_SPLITK, KD_CLUSTER, KD_TAIL
  long long sk;                       // KD_SK: stream-K CTAs, 0 without
  long long pp;                       // KD_PP: the consumers take turns (stream-K)
  long long tmast;                    // KD_TMAST: stream-K's outputs leave through TMA stores

  KD_HD constexpr bool f32() const { return elem == 4; }
  // KD_WG consumer warpgroups, and with KD_WS the producer warpgroup.
  KD_HD constexpr long long threads() const { return 128 * (wg + ws); }
  // The threads that copy k tiles (and split B): all of them, or the producer warpgroup.
  KD_HD constexpr long long loaders() const { return ws ? 128 : threads(); }
  KD_HD constexpr long long bm() const { return 64 * wg * mw; }
  KD_HD constexpr long long bk() const { return 128 / elem; }  // a k tile: one 128-byte swizzle row of k
  KD_HD constexpr long long vec() const { return 16 / elem; }  // elements per 16-byte chunk
  KD_HD constexpr long long acc() const { return bn / 2; }     // accumulator registers per m64 block

  // Shared memory, from a 1024-aligned base: KD_STAGES stages, each A then B (each 1024-aligned;
  // with KD_BLO then B's lo tile); then the f32 B-lo buffers; then KD_WS's mbarriers. 16-bit A, and
  // f32 A with ta = T outside KD_F16S (a_swz), are swizzled like B: ldmatrix's eight rows of a matrix
  // are rows r..r+7 at one logical chunk, eight distinct chunks once swizzled. (f32 A's rows were
  // padded to 32 + 4 floats before session 45; unpadded, a stage at 128 rows takes 8 KB less and runs
  // faster: f32 28672x16x4096, stream-K, 121 us against 132, 4096x64x4096 29.7-29.9 against
  // 31.3-31.4, 512x512x64 x32 18.6 against 18.9-19.1, 1024^3 23.2 against 23.9; kernel lab, H200,
  // serving.) Other f32 A is read by ordinary loads from padded rows: [32][BM + 8] (ta = N: k t,
  // rows g.., banks 8t + g); KD_F16S reads float2 pairs from [BM][32 + 8] (banks 8g + 2t) or, ta = N,
  // single floats from [32][BM + 4] (lane (g, t) reads rows g.. at k 2t and 2t + 1: banks 8t + g,
  // and + 4).
  KD_HD constexpr bool a_swz() const { return f32() && ta && !f16s; }
  KD_HD constexpr long long a_ld_f32() const {
    return a_swz() ? bk() : ta ? (f16s ? bk() + 8 : bk() + 4) : (f16s ? bm() + 4 : bm() + 8);
  }
  KD_HD constexpr long long a_bytes_raw() const {
    return f32() ? (ta ? bm() * a_ld_f32() : bk() * a_ld_f32()) * 4 : bm() * 128;
  }
  KD_HD constexpr long long a_bytes() const { return (a_bytes_raw() + 1023) / 1024 * 1024; }
  KD_HD constexpr long long b_bytes() const { return bn * 128; }
  KD_HD constexpr long long stage_bytes() const { return a_bytes() + b_bytes() * (blo ? 2 : 1); }
  // f32 B-lo buffers: splitting tile i+1 overwrites tile i+1-lo_bufs's. With KD_PROMOTE = 2 the other
  // warpgroup may still run tile i-1 when a thread splits, so the ring is one deeper. With KD_PP
  // consumer 1 runs a segment behind consumer 0, and a third buffer lets the producer split consumer
  // 0's next tile before consumer 1 retires the one two back (512x512x64 x32: 18.97-18.98 us against
  // 19.16-19.28 with two; kernel lab, H200, session 44). None with KD_BLO (the lo tile travels in the
  // stage) or KD_F16S (B arrives split).
  KD_HD constexpr long long lo_bufs() const { return blo || f16s ? 0 : promote > 1 || pp ? 3 : 2; }
  // KD_WS: the mbarriers (full and empty per stage, lofree per B-lo buffer, KD_TMAL's landed per
  // stage), 8 bytes each.
  KD_HD constexpr long long bar_bytes() const { return ws ? 256 : 0; }
  // KD_TMAST: each consumer warpgroup's 16 KB staging buffer for its outputs (two boxes of 32 rows x
  // 64 columns of f32 in the 128-byte swizzle), 1024-aligned after the mbarriers.
  KD_HD constexpr long long staging_offset() const {
    return (stages * stage_bytes() + lo_bufs() * b_bytes() + bar_bytes() + 1023) / 1024 * 1024;
  }
  KD_HD constexpr long long staging_bytes() const { return tmast ? wg * 16384 : 0; }
  // The dynamic shared memory of the launch: 1024 bytes of alignment slack and the above.
  KD_HD constexpr long long smem_bytes() const {
    return tmast ? 1024 + staging_offset() + staging_bytes()
                 : 1024 + stages * stage_bytes() + lo_bufs() * b_bytes() + bar_bytes();
  }
  // KD_CLUSTER stages the CTA's f32 partial tile in its own ring.
  KD_HD constexpr bool partial_tile_fits() const { return bm() * bn * 4 <= stages * stage_bytes(); }

  // Workspace, floats: first the partial tiles, [slot][batch][n][m], one slot per k split (split-K
  // without a cluster), per tail range (KD_TAIL) or per CTA that shares a tile (stream-K); then with
  // KD_BLO B's lo parts ([batch][n][kd_wg_blo_ld(k)] from a 16-byte boundary) or with KD_F16S B's
  // hi|lo halves, one 128-byte row per column and k tile ([batch][n][kd_wg_ld16(k)]), then 1 / s per
  // column ([batch][n]), from a 128-byte boundary. The partial slots before B's parts (neither comes
  // with stream-K):
  KD_HD constexpr long long parts() const { return tail > 1 ? tail : cluster ? 1 : splitk; }
  // The launches that sum one tile per block row (KD_TAIL, stream-K) take its 4-row column pieces.
  KD_HD constexpr long long tile_pieces() const { return bm() / 4 * bn; }
};

KD_HD constexpr long long kd_wg_blo_ld(long long k) { return (k + 3) & ~3LL; }
KD_HD constexpr long long kd_wg_ld16(long long k) { return (k + 31) / 32 * 32; }
// Floats before B's lo parts (KD_BLO) and before B's halves (KD_F16S): `parts` partial slots of
// batch * m * n, rounded up to 16 and 128 bytes.
KD_HD constexpr long long kd_wg_blo_offset(long long parts, long long batch, long long m, long long n) {
  return parts > 1 ? (parts * batch * m * n + 3) & ~3LL : 0;
}
KD_HD constexpr long long kd_wg_b16_offset(long long parts, long long batch, long long m, long long n) {
  return parts > 1 ? (parts * batch * m * n + 31) & ~31LL : 0;
}

// KD_TAIL: the grid runs one CTA per tile that fills a whole wave (m fastest), then `tail` per tile
// past the last whole wave; the kernel reads the number of whole tiles back from its grid's extent.
KD_HD constexpr long long kd_wg_tail_ctas(long long tiles, long long split_tiles, long long tail) {
  return tiles + split_tiles * (tail - 1);
}
KD_HD constexpr long long kd_wg_tail_whole(long long tiles, long long ctas, long long tail) {
  return tiles - (ctas - tiles) / (tail - 1);
}

// Stream-K: a batch's tiles * k tiles units, tile-major, in `ctas` equal contiguous ranges, CTA c
// taking [kd_wg_sk_begin(c), kd_wg_sk_begin(c + 1)) (every range non-empty: ctas <= units), and the
// CTA whose range holds unit u. A tile that one CTA covers whole goes straight to C; the others leave
// one partial per CTA that touches them.
KD_HD constexpr long long kd_wg_sk_begin(long long cta, long long units, long long ctas) { return cta * units / ctas; }
KD_HD constexpr long long kd_wg_sk_cta(long long u, long long units, long long ctas) {
  return ((u + 1) * ctas - 1) / units;
}
// The most CTAs any tile spans: the workspace's partial slots (1: every tile whole, no workspace and
// no second launch). Host only (a loop over the tiles).
inline long long kd_wg_sk_slots(long long tiles, long long ktiles, long long ctas) {
  const long long units = tiles * ktiles;
  long long most = 1;
  for (long long t = 0; t < tiles; ++t) {
    const long long first = kd_wg_sk_cta(t * ktiles, units, ctas);
    const long long span = kd_wg_sk_cta(t * ktiles + ktiles - 1, units, ctas) - first + 1;
    most = span > most ? span : most;
  }
  return most;
}

#endif  // KD_WG_TILED_LAYOUT_CUH
