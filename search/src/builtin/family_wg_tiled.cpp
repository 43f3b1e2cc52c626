#include "builtin/family_wg_tiled.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"
#include "builtin/kernels/wg_tiled_layout.cuh"
#include "builtin/param_names.hpp"

namespace kd::builtin {
namespace {

using namespace param_names;

constexpr long long kMaxTail = 4;  // 5 and 7 measured slower than 4 on 28672x128 (kernel lab, H200)
constexpr long long kTileK = 32;  // f32 elements per k tile: one 128-byte swizzle row
constexpr long long kMaxSplit = 16;
// KD_PP's consumers take turns a segment each: consumer 0 finishes a segment before consumer 1 starts
// it, and the producer waits for both to release tile j - 2's slot before it publishes tile j + 1, so a
// segment of four k tiles deadlocks. Three did with two B-lo buffers (the GPU gate hung on k = 72,
// H200); turns now have three (wg_tiled_layout.cuh), but no three-tile segment has run since.
constexpr long long kMaxTurnsKTiles = 2;
// A cluster of the splits of one tile: 8 CTAs is the portable cluster size.
constexpr long long kMaxClusterSplit = 8;
// Outputs up to 16 columns take one m64n16 wgmma, 17-47 columns m64n32 ones (one or two column tiles),
// both warp-specialized only: a 64-column tile would be mostly padding there. From 48 columns the
// m64n64 and m64n128 tiles. The kernel computes any n (B's rows past n are zero-filled, C's columns
// past n never stored), so a range key (issue 29) takes the tiles of its first n.
constexpr long long kMinN = 48;
constexpr long long kNarrowN = 16;
// KD_F16S's seeds: outputs wider than 64 columns (its m64n128 tiles).
constexpr long long kF16sMinN = 64;

// The kernel's layout of `p` for `key` (f32 operands): shared memory, workspace and grids, from the
// header the kernel compiles too (kernels/wg_tiled_layout.cuh).
kd_wg_tiled_layout layout_of(const GemmKey& key, const Params& p) {
  return {4,
          key.ta == Transpose::T ? 1 : 0,
          param(p, kWg),
          param(p, kMw),
          param(p, kBn),
          param(p, kStages),
          param(p, kWs),
          param(p, kPromote),
          param(p, kBlo),
          param(p, kF16s),
          param(p, kSplit),
          param(p, kCluster),
          param(p, kTail),
          param(p, kSk),
          param(p, kPp),
          param(p, kTmast)};
}
long long bm_of(const Params& p) { return 64 * param(p, kWg) * param(p, kMw); }
long long tiles_of(const GemmKey& key, const Params& p) {
  return ceil_div(key.m, bm_of(p)) * ceil_div(key.n, param(p, kBn)) * key.batch;
}
long long smem_bytes(const GemmKey& key, const Params& p) { return layout_of(key, p).smem_bytes(); }
// KD_SK (stream-K): one batch's tiles * k tiles units, tile-major, in KD_SK equal contiguous ranges, one
// per CTA. A tile that one CTA covers whole goes straight to C; the others leave one partial per CTA
// that touches them, in workspace slots summed by kd_wg_sk_reduce.
long long sk_units(const GemmKey& key, const Params& p) {
  return ceil_div(key.m, bm_of(p)) * ceil_div(key.n, param(p, kBn)) * ceil_div(key.k, kTileK);
}
// The most CTAs any tile spans: the workspace's slots (1: every tile whole, no workspace, no reduce).
// KD_SKB's CTAs take whole tiles (wg_valid).
long long sk_partials(const GemmKey& key, const Params& p) {
  if (param(p, kSkb)) return 1;
  const long long tiles = ceil_div(key.m, bm_of(p)) * ceil_div(key.n, param(p, kBn));
  return kd_wg_sk_slots(tiles, ceil_div(key.k, kTileK), param(p, kSk));
}
long long blo_floats(const GemmKey& key) { return key.batch * key.n * kd_wg_blo_ld(key.k); }
long long b16_floats(const GemmKey& key) { return key.batch * key.n * (kd_wg_ld16(key.k) + 1); }
// The partial tiles (stream-K: one slot per CTA that shares a tile; otherwise per split without a
// cluster or per tail range), then KD_BLO's lo parts or KD_F16S's halves and scales.
long long workspace_bytes(const GemmKey& key, const Params& p) {
  const kd_wg_tiled_layout l = layout_of(key, p);
  const long long mn = key.batch * key.m * key.n;
  if (param(p, kSk)) {
    // KD_TMAST: C's tensor map for each consumer warpgroup of each CTA, 128 bytes; KD_TMAL: then A's and
    // B's maps for each CTA, 256 bytes, after the room of the TMA stores' (with or without them). Both
    // only with whole tiles (wg_valid): no partials.
    const long long ctas = param(p, kSk) * (param(p, kSkb) ? 1 : key.batch);
    if (param(p, kTmal)) return (128 * param(p, kWg) + 256) * ctas;
    if (param(p, kTmast)) return 128 * param(p, kWg) * ctas;
    const long long slots = sk_partials(key, p);
    return slots > 1 ? slots * mn * 4 : 0;
  }
  if (l.f16s) return 4 * (kd_wg_b16_offset(l.parts(), key.batch, key.m, key.n) + b16_floats(key));
  if (l.blo) return 4 * (kd_wg_blo_offset(l.parts(), key.batch, key.m, key.n) + blo_floats(key));
  return l.parts() > 1 ? l.parts() * mn * 4 : 0;
}
// The smallest power-of-two split (at most 16, keeping >= 8 k tiles per split) that gives at least
// one CTA per SM; for a batched call, a CTA to at least 90% of the SMs. Attention's 128x512x512 x32 is
// 128 tiles on 132 SMs: split in two it ran 36.7 us against 24.2 unsplit (1.94 waves and a reduce
// launch; H200, session 33). One-batch calls keep the stricter rule their seeds were measured with.
long long split_to_fill(const GemmKey& key, const Target& t, const Params& p) {
  const long long tiles = tiles_of(key, p), ktiles = ceil_div(key.k, kTileK);
  const long long want = key.batch > 1 ? (t.sms * 9 + 9) / 10 : t.sms;
  long long s = 1;
  while (tiles * s < want && s * 2 <= kMaxSplit && ktiles / (s * 2) >= 8) s *= 2;
  return s;
}

std::optional<std::string> wg_rejects(const GemmKey& key) {
  if (key.a != DType::f32 || key.b != DType::f32)
    return "f32 inputs only (its 16-bit path measured slower than cuBLAS; tc_tiled serves those)";
  // tb = T only through the f16 splits (KD_F16S), whose first launch reads B a float at a time and
  // writes the k-major halves that the main kernel copies; they need 128-column tiles.
  const bool tb_t = key.tb == Transpose::T;
  if (tb_t && (key.precision == PrecisionClass::f16 || key.n <= kF16sMinN))
    return fmt::format("tb=T (n-contiguous B) is served by the f16 splits only: f32 or tf32 precision with n > {}",
                       kF16sMinN);
  if (key.lda % 4 || (!tb_t && key.ldb % 4)) return "lda and ldb must be multiples of 4 for 16-byte copies";
  if (key.batch > 1 && (key.stride_a % 4 || (!tb_t && key.stride_b % 4)))
    return "batch strides must keep 16-byte alignment";
  return std::nullopt;
}

Params tile(long long wg, long long bn, long long stages, long long promote, long long late, long long ws) {
  return {{kWg, wg},         {kMw, 1},       {kBn, bn}, {kStages, stages}, {kSplit, 1},
          {kPromote, promote}, {kLate, late}, {kWs, ws}, {kCluster, 0}};
}

// CTAs of `p` resident per SM, by shared memory (the SM's total is the opt-in limit plus the 1 KB
// the driver reserves per block).
long long ctas_per_sm(const GemmKey& key, const Target& t, const Params& p) {
  return std::max(1LL, (t.smem_optin_bytes + 1024LL) / (smem_bytes(key, p) + 1024));
}
// The largest power-of-two split (at most 16, keeping >= 8 k tiles per split) that still fits in
// one wave of resident CTAs: the n <= 16 shapes stream A, and a second, partial wave measured
// 10-30% slower (tools/dev/lab_wg_f32.json).
long long split_one_wave(const GemmKey& key, const Target& t, const Params& p) {
  const long long tiles = tiles_of(key, p), ktiles = ceil_div(key.k, kTileK), room = t.sms * ctas_per_sm(key, t, p);
  long long s = 1;
  while (tiles * s * 2 <= room && s * 2 <= kMaxSplit && ktiles / (s * 2) >= 8) s *= 2;
  return s;
}

// How full the last wave of a split-K decomposition is (1 for whole waves).
double wave_fill(const GemmKey& key, const Params& p, long long room) {
  const long long ctas = tiles_of(key, p) * param(p, kSplit);
  return static_cast<double>(ctas) / static_cast<double>(ceil_div(ctas, room) * room);
}

// KD_TAIL: the tiles past the last whole wave of resident CTAs are split in k, each into `tail`
// ranges, so that the last wave is made of shorter CTAs. 0 when there is no partial wave.
long long tail_tiles(const GemmKey& key, const Target& t, const Params& p) {
  const long long tiles = tiles_of(key, p), room = t.sms * ctas_per_sm(key, t, p);
  return tiles > room ? tiles % room : 0;
}
// The tail split (2..kMaxTail) that finishes the tail tiles soonest, in units of one whole tile's time
// (ceil(rounds of pieces) / pieces per tile); 1 when no split beats leaving the partial wave alone.
// 28672x128x4096 (224 tiles on 132 SMs, 92 left over): 4 ranges each, 3 rounds of quarter tiles, 0.75
// of a tile's time instead of 1; measured 299.7 against 315.9 us (kernel lab, H200, session 12).
long long tail_split(const GemmKey& key, const Target& t, const Params& p) {
  const long long tail = tail_tiles(key, t, p), room = t.sms * ctas_per_sm(key, t, p);
  if (tail == 0 || key.batch != 1) return 1;
  long long best = 1;
  double best_time = 1.0;
  for (long long s = 2; s <= kMaxTail; ++s) {
    const double time = static_cast<double>(ceil_div(tail * s, room)) / static_cast<double>(s);
    if (time < best_time - 1e-9) best = s, best_time = time;
  }
  return best;
}

// Appends `base` as stream-K over one wave of resident CTAs where its split-K decomposition leaves the
// last wave less than 90% full and each CTA still gets at least 8 k tiles. 6144x128x4096 (48 tiles
// of 128x128): 132 CTAs of 46.5 k tiles, 72.3 us against 81.2 us in 8 splits (2.9 waves), kernel
// lab, H200, session 13. Where split-K fills its waves it stays ahead (4096x128x14336: 150.4 against
// 146.7 us with the same 4-way decomposition): the per-segment plans cost the producer registers.
void add_sk_seed(const GemmKey& key, const Target& t, std::vector<Params>& out, Params base) {
  const long long room = t.sms * ctas_per_sm(key, t, base);
  if (key.batch != 1 || param(base, kWs) != 1 || wave_fill(key, base, room) >= 0.9) return;
  const long long units = sk_units(key, base);
  if (units < 8 * room || units > 0x7fffffffLL) return;
  out.push_back(as_stream_k(base, room));
}

// Whether `p`'s consumers can take turns (KD_PP) on `key`: stream-K's two consumers, a tile of at most
// kMaxTurnsKTiles k tiles. The seed rule and wg_valid share it.
bool turns_fit(const GemmKey& key, const Params& p) {
  return param(p, kSk) != 0 && param(p, kWg) == 2 && ceil_div(key.k, kTileK) <= kMaxTurnsKTiles;
}

// What every stream-K tensor map of wg_tiled (KD_TMAST's, KD_TMAL's) asks of `p` on `key`: whole tiles
// per CTA (the maps' workspace room leaves none for partials), one m64 block per warpgroup, and m, n and
// the batch within a map's 32-bit extents.
bool sk_maps_fit(const GemmKey& key, const Params& p) {
  if (param(p, kSk) == 0 || param(p, kMw) != 1 || sk_partials(key, p) != 1) return false;
  return key.m < 0x7fffffffLL && key.n_last() < 0x7fffffffLL && key.batch < 0x7fffffffLL;
}

// Whether stream-K's outputs can leave through TMA stores (KD_TMAST) on `key`: sk_maps_fit, f32 C, and
// C's column and batch strides multiples of 16 bytes. C's own alignment is the kernel's to check (a C
// off 16 bytes takes the ordinary stores).
bool tma_stores_fit(const GemmKey& key, const Params& p) {
  if (!sk_maps_fit(key, p) || key.c != DType::f32) return false;
  return key.ldc % 4 == 0 && (key.batch == 1 || key.stride_c % 4 == 0);
}

// Whether stream-K's operands can arrive by the TMA (KD_TMAL) on `key`: sk_maps_fit with k within the
// maps' 32 bits too; f32 with tb = N (B's rows of k, the ring's layout; A either way, kernels/
// wg_tiled_copy.cuh's kd_make_map3); two consumers of m64n128 tiles (the boxes the GPU gate has run);
// batch entries that do not overlap (a map's batch stride; a broadcast entry, stride 0, takes the
// cp.async copies). The strides' 16 bytes and A's and B's alignment are every wg_tiled record's
// (wg_rejects, the dispatcher).
bool tma_loads_fit(const GemmKey& key, const Params& p) {
  if (!sk_maps_fit(key, p) || key.k >= 0x7fffffffLL) return false;
  if (param(p, kWs) != 1 || param(p, kWg) != 2 || param(p, kBn) != 128 || param(p, kF16s) || param(p, kBlo))
    return false;
  if (key.a != DType::f32 || key.b != DType::f32 || key.tb != Transpose::N) return false;
  const long long a_extent = key.ta == Transpose::T ? key.m * key.lda : key.k * key.lda;
  return key.batch == 1 || (key.stride_a >= a_extent && key.stride_b >= key.n_last() * key.ldb);
}

// `p` with its operands by the TMA (KD_TMAL) where they fit. Kernel lab, H200, serving, session 47,
// against the cp.async copies in the same run: 128^3 x256 17.43 / 17.59 us against 18.40 / 18.39;
// 512x512x64 x32 18.42 / 18.30 against 19.30 / 19.17, with turns 18.03 / 18.21 against 18.48 / 18.44,
// with turns and TMA stores 17.78 / 17.66 against 18.23 / 18.21.
Params with_tma_loads(const GemmKey& key, Params p) {
  if (tma_loads_fit(key, p)) p[kTmal] = 1;
  return p;
}

// The stream-K seed just appended with its consumers taking turns (KD_PP), where they fit. The turns
// overlap one consumer's stores with the other's wgmmas; kernel lab, H200, serving: 512x512x64 x32
// 19.2 us against 20.1 (cuBLAS 38.0).
void add_turns_seed(const GemmKey& key, std::vector<Params>& out) {
  if (!turns_fit(key, out.back())) return;
  Params p = out.back();
  p[kPp] = 1;
  out.push_back(p);
  // With turns, the outputs through TMA stores from a staging buffer (KD_TMAST), where C allows them:
  // 512x512x64 x32 18.22 us against 18.55-18.64, BERT's scores 23.48-23.53 against 23.76-23.95 (kernel
  // lab, H200, serving, session 45; without turns they lost, 128^3 x256 18.93 against 18.43).
  if (!tma_stores_fit(key, p)) return;
  p[kTmast] = 1;
  out.push_back(p);
}

// Appends `base` as a persistent loop for a batched call of many short tiles (attention's 512x512x64
// x32: 16 tiles a batch, 2 k tiles each): stream-K over whole tiles, the most CTAs a batch that divide
// its tiles, at least two tiles each, in one wave of at least 90% of the resident CTAs. Each CTA's
// producer then loads its next tile while the consumers store the last; one tile per CTA left
// every tile's store exposed (24.3 us against cuBLAS's 37.3, H200, session 33).
void add_batched_sk_seed(const GemmKey& key, const Target& t, std::vector<Params>& out, const Params& base) {
  if (key.batch == 1 || param(base, kWs) != 1 || param(base, kSplit) != 1) return;
  const long long tiles = tiles_of(key, base), per = tiles / key.batch, room = t.sms * ctas_per_sm(key, t, base);
  for (long long d = per / 2; d >= 2; --d) {
    if (per % d != 0 || d * key.batch > room) continue;
    if (10 * d * key.batch >= 9 * room) {
      out.push_back(with_tma_loads(key, as_stream_k(base, d)));
      add_turns_seed(key, out);
      return;
    }
    break;
  }
  // Too few tiles a batch for that (128^3 x256: one each): the same over every batch entry in one
  // launch (KD_SKB), the most CTAs that divide all the tiles, two or more each. 128^3 x256 in 128 CTAs
  // of two tiles: 22.5 us against 24.4 for one tile per CTA (H100, session 33).
  for (long long c = std::min(room, tiles / 2); c >= 2; --c) {
    if (tiles % c != 0) continue;
    if (10 * c >= 9 * room) {
      Params p = as_stream_k(base, c);
      p[kSkb] = 1;
      out.push_back(with_tma_loads(key, p));
      add_turns_seed(key, out);
    }
    return;
  }
}

// Appends `base` with its partial last wave split in k (KD_TAIL), where that finishes sooner.
void add_tail_seed(const GemmKey& key, const Target& t, std::vector<Params>& out, Params base) {
  if (param(base, kSplit) != 1) return;
  const long long s = tail_split(key, t, base);
  if (s < 2) return;
  base[kTail] = s;
  out.push_back(base);
}

// Strict fp32 on f16 wgmmas (KD_F16S), with the split that fills the SMs, half of it, and the tail
// split. Kernel lab, H200, session 16, against the TF32 plans' best: 4096x128x4096 43.1 us in 4
// splits (49.1), 4096x128x14336 116.4 in 4 (147.0), 6144x128x4096 67.2 in 2 (70.8 stream-K),
// 28672x128x4096 223.5 with KD_TAIL 4 (291.4 stream-K); errors 1.5-2.9e-7 against cuBLAS's 4.1-8.1e-7.
// Every layout (issue 30): ta = N reads A's fragments from k rows, tb = T splits B from its rows of n.
// A TF32 call with tb = T gets them with one product (hi * hi, KD_3XTF32 = 0: TF32's 11 significant
// bits at f16's rate), the only plan that reads such a B; with tb = N its TF32 plans are faster (H100,
// session 23: 4096^3 one product 777 us against cuBLAS TF32's 356; kernel-notes.md), so there the
// one product is an idea move (wg.f16s_on) only.
// Strided batches of short k (attention's scores and values), tb = N: the first launch splits each of
// the batch x n columns of B in a block of its own, 16384-32768 blocks of 64-128 elements, and those
// plans ran 69.5 and 93.5 us at 512x512x64 x32 and 128^3 x256 against 20.0 and 18.3 for the 3xTF32
// stream-K plans (kdctl search, H200, session 36). With tb = T the f16 splits are the only plans.
bool f16s_split_too_fine(const GemmKey& key) {
  return key.batch > 1 && key.k <= 128 && key.tb == Transpose::N;
}

void add_f16s_seeds(const GemmKey& key, const Target& t, std::vector<Params>& out) {
  if (key.n <= kF16sMinN || key.precision == PrecisionClass::f16 || f16s_split_too_fine(key)) return;
  if (key.precision == PrecisionClass::tf32 && key.tb == Transpose::N) return;
  Params f = tile(2, 128, 4, 1, 0, 1);
  f[kF16s] = 1;
  f[k3x] = key.precision == PrecisionClass::f32 ? 1 : 0;
  f[kSplit] = split_to_fill(key, t, f);
  out.push_back(f);
  if (param(f, kSplit) > 1) {
    Params half = f;
    half[kSplit] = param(f, kSplit) / 2;
    out.push_back(half);
  }
  add_tail_seed(key, t, out, f);
}

// The narrow plan (a producer and two consumers of m64n32 or m64n64, split-K to one wave; the last
// seed `base`) on f16 splits, for strict f32: the same three products at twice TF32's rate. Through
// the gate (H200, session 33) it won 4096 x 64 x 4096 by little: 30.7-31.7 us against 32.3 for the
// 3xTF32 plan, still 53% of a streaming read; at 4096 x 32 x 4096 the 3xTF32 plan stayed ahead (24.6 us).
// Since session 35 (the next tile split while this one's wgmmas run, the split of B overlapped) it wins
// both through the daemon's own search on an H200: 26.8 us at n = 64, 23.9 at n = 32.
void add_narrow_f16s_seed(const GemmKey& key, const Params& base, std::vector<Params>& out) {
  if (key.precision != PrecisionClass::f32 || key.tb != Transpose::N || f16s_split_too_fine(key)) return;
  Params f = base;
  f[kF16s] = 1;
  out.push_back(f);
}

std::vector<Params> wg_seeds(const GemmKey& key, const Target& t) {
  if (key.tb == Transpose::T) {
    // B with n contiguous: only the f16 splits read it (wg_rejects).
    std::vector<Params> out;
    add_f16s_seeds(key, t, out);
    return out;
  }
  if (key.n < kMinN) {
    // The kernel lab's best for f32 n = 16 (H200): m64n16 wgmmas, a producer warpgroup with one or two
    // consumers, one wave of CTAs; 1.70-1.82x cuBLAS, 6-14% faster than skinny_bulk on 6144x16 and
    // 4096x16x14336.
    // The third seed takes B's lo parts from a first launch (KD_BLO): 28672x16x4096 139 against 147 us,
    // 4096x16x4096 27.1 against 26.3 (the extra launch), kernel lab, H200, session 12.
    // 17-47 columns: the same plans with m64n32 wgmmas (session 23).
    const long long bn = key.n <= kNarrowN ? 16 : 32;
    std::vector<Params> out = {tile(2, bn, 8, 1, 0, 1), tile(1, bn, 6, 1, 0, 1), tile(2, bn, 8, 1, 0, 1)};
    out[2][kBlo] = 1;
    for (Params& p : out) p[kSplit] = split_one_wave(key, t, p);
    if (bn == 32) add_narrow_f16s_seed(key, out[0], out);
    add_tail_seed(key, t, out, out[0]);
    add_sk_seed(key, t, out, out[0]);
    return out;
  }
  // The kernel lab's best (tools/dev/lab_wg_f32.json, H200): a producer warpgroup and two consumer
  // warpgroups of m64n128, 5 stages promoting every two k tiles or 4 stages promoting every tile;
  // 4096^3 (ta = N) at 2.05-2.08x cuBLAS, the n = 128 shapes (split-K to fill the SMs) at
  // 1.77-2.21x. Every warp-specialized variant beat every one without.
  std::vector<Params> out;
  if (key.n <= 64) {
    out = {tile(2, 64, 6, 2, 0, 1), tile(2, 64, 6, 2, 0, 0), tile(1, 64, 6, 2, 0, 0)};
  } else {
    out = {tile(2, 128, 5, 2, 0, 1), tile(2, 128, 4, 1, 0, 1)};
  }
  for (Params& p : out) p[kSplit] = split_to_fill(key, t, p);
  // The warp-specialized seed the others start from: promoting every tile above 64 columns.
  const std::size_t ws_seed = key.n > 64 ? 1 : 0;
  add_tail_seed(key, t, out, out[ws_seed]);
  add_sk_seed(key, t, out, out[ws_seed]);
  add_batched_sk_seed(key, t, out, out[ws_seed]);
  // Entries of at most 64 rows (attention's values with 64-wide heads): the same loop with one consumer
  // warpgroup, whose m64 tile is the whole entry; two leave each tile's second 64 rows empty. 64x128x128
  // x512 (ta = N): 23.2 us against 30.2 with two consumers and 28.9 for the kd_tc_tiled plan BERT's
  // prewarm had published; cuBLAS 35.1 (kernel lab, H200, serving, session 43). Taller entries, where
  // two consumers share each B tile, lose with one: 128^3 x256 21.6 against 18.6.
  if (key.batch > 1 && key.m <= 64) {
    Params one = out[ws_seed];
    one[kWg] = 1;
    add_batched_sk_seed(key, t, out, one);
  }
  add_f16s_seeds(key, t, out);
  // 48-64 columns stream A as the narrow outputs do: the narrow plan (8 stages, a producer and two
  // consumers promoting every tile, split-K to one wave) with m64n64 tiles (session 23).
  if (key.n <= 64) {
    Params narrow = tile(2, 64, 8, 1, 0, 1);
    narrow[kSplit] = split_one_wave(key, t, narrow);
    out.push_back(narrow);
    add_narrow_f16s_seed(key, narrow, out);
  }
  // Too few tiles for the SMs, but two splits of each come close to one wave (1000^3: 64 tiles on 132
  // SMs): reduce the two splits in a cluster. The kernel lab (tools/dev/lab_wg_cluster.json, H200)
  // measured 1000^3 at 30.2 us against 34.4 us with the workspace and second launch, 32.4 us for the
  // best unsplit tile and 62.4 us for cuBLAS. Where two splits leave SMs idle, more splits through the
  // workspace measured faster (6144x128x4096: 5 splits 79.6 us, 2 in a cluster 83.0 us). Larger
  // clusters measured slower (4 splits of 4096x128x4096: 90 against 51 us): a cluster must fit in
  // one GPC, and at one CTA per SM the H200 runs 66 clusters of 2 (every SM) but only 30 of 4.
  Params pair = tile(2, 128, 4, 1, 0, 1);
  pair[kSplit] = 2;
  pair[kCluster] = 1;
  const long long pair_tiles = tiles_of(key, pair);
  if (pair_tiles < t.sms && 4 * 2 * pair_tiles >= 3 * t.sms) out.push_back(pair);
  return out;
}

Params wg_complete(const GemmKey& key, const Target&, Params p) {
  p[kMw] = 1;
  // Strict-fp32 calls need the error compensation; a TF32 call may skip it.
  if (key.precision == PrecisionClass::f32) p[k3x] = 1;
  else if (!p.contains(k3x)) p[k3x] = 0;
  if (param(p, kSplit) < 1) p[kSplit] = 1;
  if (!p.contains(kPromote)) p[kPromote] = 2;
  if (!p.contains(kLate)) p[kLate] = 0;
  if (!p.contains(kWs)) p[kWs] = 0;
  if (!p.contains(kCluster)) p[kCluster] = 0;
  if (!p.contains(kBlo)) p[kBlo] = 0;
  if (!p.contains(kTail)) p[kTail] = 1;
  if (!p.contains(kSk)) p[kSk] = 0;
  if (!p.contains(kF16s)) p[kF16s] = 0;
  return p;
}

bool wg_valid(const GemmKey& key, const Target& t, const Params& p) {
  // wgmma exists only on compute capability 9.0 (sm_90a).
  if (t.arch != "sm_90" && t.arch != "sm_90a") return false;
  const long long wg = param(p, kWg), bn = param(p, kBn), stages = param(p, kStages), split = param(p, kSplit);
  if ((wg != 1 && wg != 2) || param(p, kMw) != 1 || (bn != 16 && bn != 32 && bn != 64 && bn != 128)) return false;
  // m64n16 and m64n32 tiles only for outputs that narrow, and only with the producer warpgroup (the
  // kernel's copy plan needs 128 loading threads for a 16- or 32-row B tile).
  if (bn == 16 && (key.n > kNarrowN || param(p, kWs) != 1)) return false;
  if (bn == 32 && (key.n <= kNarrowN || key.n >= kMinN || param(p, kWs) != 1)) return false;
  if (bn != 16 && key.n <= kNarrowN) return false;
  if (stages < 4 || stages > 8) return false;
  const long long promote = param(p, kPromote), late = param(p, kLate);
  if ((promote != 1 && promote != 2) || (late != 0 && late != 1)) return false;
  // The producer warpgroup issues the copies; there is no "after the wgmmas" for it.
  const long long ws = param(p, kWs);
  if ((ws != 0 && ws != 1) || (ws == 1 && late == 1)) return false;
  const long long x3 = param(p, k3x);
  if ((x3 != 0 && x3 != 1) || (x3 == 0 && key.precision == PrecisionClass::f32)) return false;
  if (split < 1 || split > kMaxSplit || split > ceil_div(key.k, kTileK)) return false;
  // The cluster reduction (KD_CLUSTER) runs in the producer warpgroup's kernel, over 2..8 splits, and
  // stages the tile's f32 partials in the CTA's own ring.
  const long long cluster = param(p, kCluster);
  if (cluster != 0 && cluster != 1) return false;
  if (cluster == 1 && (ws != 1 || split < 2 || split > kMaxClusterSplit || !layout_of(key, p).partial_tile_fits()))
    return false;
  // B's lo parts from the workspace: strict fp32 (3xTF32) in the warp-specialized kernel only.
  const long long blo = param(p, kBlo);
  if ((blo != 0 && blo != 1) || (blo == 1 && (ws != 1 || x3 != 1))) return false;
  // The tail split: no k split of its own, one batch (the wave arithmetic is per launch), a partial
  // wave to split, and not with KD_BLO (ptxas spills in the producer).
  const long long tail = param(p, kTail);
  if (tail < 1 || tail > kMaxTail) return false;
  if (tail > 1 && (split != 1 || cluster != 0 || blo != 0 || key.batch != 1 || tail_tiles(key, t, p) == 0))
    return false;
  // Stream-K: 2 CTAs up to one per k-tile unit (32-bit unit arithmetic in the kernel), in the
  // warp-specialized kernel promoting every tile, instead of the other ways to divide k.
  const long long sk = param(p, kSk);
  if (sk < 0 || sk == 1) return false;
  if (sk > 0 && (ws != 1 || promote != 1 || split != 1 || cluster != 0 || blo != 0 || tail != 1 || sk > 65535))
    return false;
  // KD_SKB: the units run over every batch entry (one launch of KD_SK CTAs), each CTA whole tiles.
  const long long skb = param(p, kSkb);
  if (skb != 0 && skb != 1) return false;
  if (skb == 0 && sk > 0 && (sk > sk_units(key, p) || sk_units(key, p) > 0x7fffffffLL)) return false;
  if (skb == 1 &&
      (sk == 0 || key.batch < 2 || tiles_of(key, p) % sk != 0 || key.batch * sk_units(key, p) > 0x7fffffffLL))
    return false;
  // Turns (KD_PP), where they fit (turns_fit).
  const long long pp = param(p, kPp);
  if (pp != 0 && pp != 1) return false;
  if (pp == 1 && !turns_fit(key, p)) return false;
  // TMA stores of stream-K's outputs (KD_TMAST), where C allows them (tma_stores_fit).
  const long long tmast = param(p, kTmast);
  if (tmast != 0 && tmast != 1) return false;
  if (tmast == 1 && !tma_stores_fit(key, p)) return false;
  // The operands by the TMA (KD_TMAL), where they fit (tma_loads_fit).
  const long long tmal = param(p, kTmal);
  if (tmal != 0 && tmal != 1) return false;
  if (tmal == 1 && !tma_loads_fit(key, p)) return false;
  // f16 splits: the strict-fp32 arithmetic in the one shape the kernel has (a producer and two m64n128
  // consumers promoting every tile), without the other k-division and B-lo schemes; any ta and tb. B with
  // tb = T is read by nothing else.
  const long long f16s = param(p, kF16s);
  if (f16s != 0 && f16s != 1) return false;
  if (f16s == 1 && (ws != 1 || wg != 2 || (bn != 32 && bn != 64 && bn != 128) || promote != 1 || blo != 0 || sk != 0 ||
                    cluster != 0 || key.batch * key.n > 0x7fffffffLL))
    return false;
  if (key.tb == Transpose::T && f16s != 1) return false;
  if (ceil_div(key.n, bn) > 65535 || key.batch * split > 65535 || ceil_div(key.m, bm_of(p)) > 0x7fffffffLL) return false;
  if (workspace_bytes(key, p) > (4LL << 30)) return false;
  return smem_bytes(key, p) <= t.smem_optin_bytes;
}

LaunchPlan wg_plan(const GemmKey& key, const Target& t, const Params& p) {
  LaunchPlan plan;
  if (param(p, kBlo)) {
    // B's lo parts, four floats per thread; the main kernel follows as its programmatic dependent and
    // waits on it only before its first lo copy, after issuing its prologue's A and B copies.
    LaunchSpec split;
    split.entry = "kd_wg_split_b";
    split.grid = {u32(std::clamp(ceil_div(blo_floats(key), 4 * 256), 1LL, 8LL * t.sms)), 1, 1};
    split.block = {256, 1, 1};
    plan.launches.push_back(split);
  }
  if (param(p, kF16s)) {
    // B's hi|lo halves and column scales, one block per column (tb = T: per 32 columns, whose k rows
    // its warps read 128 bytes at a time); the main kernel follows as its programmatic dependent and
    // waits on it before its first copy.
    LaunchSpec split;
    split.entry = "kd_wg_split_b16";
    const bool tb_t = key.tb == Transpose::T;
    split.grid = {u32(key.batch * (tb_t ? ceil_div(key.n, 32) : key.n)), 1, 1};
    split.block = {tb_t ? 512u : 256u, 1, 1};
    plan.launches.push_back(split);
  }
  LaunchSpec main;
  main.entry = "kd_wg_tiled";
  main.grid = {u32(ceil_div(key.m, bm_of(p))), u32(ceil_div(key.n, param(p, kBn))), u32(key.batch * param(p, kSplit))};
  const long long tail = param(p, kTail), tail_n = tail > 1 ? tail_tiles(key, t, p) : 0;
  // KD_TAIL: one CTA per whole tile, then `tail` per tile of the partial wave (the kernel reads the
  // number of split tiles back from this extent).
  if (tail > 1) main.grid = {u32(kd_wg_tail_ctas(tiles_of(key, p), tail_n, tail)), 1, u32(key.batch)};
  if (param(p, kSk)) main.grid = {u32(param(p, kSk)), 1, u32(param(p, kSkb) ? 1 : key.batch)};
  main.block = {u32(layout_of(key, p).threads()), 1, 1};
  main.smem_bytes = u32(smem_bytes(key, p));
  main.pdl = param(p, kBlo) == 1 || param(p, kF16s) == 1;
  plan.launches.push_back(main);
  if (tail > 1) {
    // The split tiles' partials summed by a programmatic dependent: one block row per tile.
    LaunchSpec reduce;
    reduce.entry = "kd_wg_tail_reduce";
    reduce.grid = {u32(ceil_div(layout_of(key, p).tile_pieces(), 256)), u32(tail_n), u32(key.batch)};
    reduce.block = {256, 1, 1};
    reduce.pdl = true;
    plan.launches.push_back(reduce);
  }
  if (param(p, kSk) && sk_partials(key, p) > 1) {
    // The partials of the tiles that more than one CTA touched, summed by a programmatic dependent:
    // one block row per tile (the whole ones return at once).
    LaunchSpec reduce;
    reduce.entry = "kd_wg_sk_reduce";
    reduce.grid = {u32(ceil_div(layout_of(key, p).tile_pieces(), 256)), u32(tiles_of(key, p) / key.batch), u32(key.batch)};
    reduce.block = {256, 1, 1};
    reduce.pdl = true;
    plan.launches.push_back(reduce);
  }
  if (param(p, kSplit) > 1 && !param(p, kCluster)) {
    // A programmatic dependent: its blocks are resident when the main kernel's last CTAs finish
    // (kernel lab, H200: 4096x128x4096 in 4 splits 49.8 -> 48.3 us, 4096x16x4096 28.6 -> 26.4 us).
    LaunchSpec reduce = splitk_reduce_launch(key, t, "kd_wg_tiled_reduce");
    reduce.pdl = true;
    plan.launches.push_back(reduce);
  }
  plan.workspace_bytes = static_cast<std::uint64_t>(workspace_bytes(key, p));  // 0 without partials or lo parts
  return plan;
}

// ---- ideas ------------------------------------------------------------------------------------

std::string split_double(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("split K across {} CTAs: {} tiles of {}x{} are {:.2f} waves on {} SMs", 2 * param(p, kSplit),
                     tiles_of(key, p) * param(p, kSplit), bm_of(p), param(p, kBn),
                     static_cast<double>(tiles_of(key, p) * param(p, kSplit)) / t.sms, t.sms);
}
std::string split_half(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("halve the K split to {}: the reduction pass moves {} MB of f32 partials", param(p, kSplit) / 2,
                     2 * workspace_bytes(key, p) / 1000000);
}
std::string stages_up(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("deepen the cp.async ring to {} stages ({} k tiles in flight) to cover DRAM latency",
                     param(p, kStages) + 1, param(p, kStages) - 1);
}
std::string stages_down(const GemmKey& key, const Target&, const Params& p) {
  Params fewer = p;
  fewer[kStages] = param(p, kStages) - 1;
  return fmt::format("shorten the ring to {} stages: {} KB of shared memory instead of {} KB", param(fewer, kStages),
                     smem_bytes(key, fewer) / 1024, smem_bytes(key, p) / 1024);
}
std::string bn_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("m64n{} wgmmas: twice the tiles ({} for {} SMs) and fewer accumulator registers",
                     param(p, kBn) / 2, 2 * tiles_of(key, p), t.sms);
}
std::string bn_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("m64n{} wgmmas: each A fragment feeds twice the columns, A ({} MB) is read {} times instead of {}",
                     2 * param(p, kBn), key.m * key.k * 4 / 1000000, ceil_div(key.n, 2 * param(p, kBn)),
                     ceil_div(key.n, param(p, kBn)));
}
std::string wg_double(const GemmKey&, const Target&, const Params&) {
  return "two warpgroups per CTA: one's FADD promotion and fragment loads overlap the other's wgmmas";
}
std::string wg_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("one warpgroup per CTA: {} tiles of 64 rows instead of {} for {} SMs", 2 * tiles_of(key, p),
                     tiles_of(key, p), t.sms);
}

std::string promote_two(const GemmKey&, const Target&, const Params&) {
  return "promote every two k tiles: the second tile's fragment loads and wgmma issue overlap the first tile's "
         "wgmmas, and the wait before the FADD comes half as often";
}
std::string promote_one(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("promote after every k tile: a chain of 12 wgmmas before each FADD instead of 24, and {} KB of "
                     "shared memory less",
                     param(p, kBn) * 128 / 1024);
}
std::string late_on(const GemmKey&, const Target&, const Params&) {
  return "issue the next stage's cp.async copies after the tile's wgmmas, off the path from the barrier to the "
         "tensor cores";
}
std::string late_off(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("issue the next stage's copies before the tile's wgmmas: {} k tiles of prefetch distance "
                     "instead of a little less",
                     param(p, kStages) - 2);
}

std::string ws_on(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("warp-specialize: a producer warpgroup copies the k tiles and splits B while {} consumer "
                     "warpgroup(s) only run wgmmas, meeting at mbarriers instead of a CTA barrier per k tile",
                     param(p, kWg));
}
std::string ws_off(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("drop the producer warpgroup: {} threads per CTA, every warpgroup copies, splits and "
                     "computes in step",
                     128 * param(p, kWg));
}

std::string cluster_on(const GemmKey& key, const Target&, const Params& p) {
  Params off = p;
  off[kCluster] = 0;
  return fmt::format("reduce the {} K splits of a tile inside a thread-block cluster through distributed shared "
                     "memory: no {} MB workspace round trip and no second launch",
                     param(p, kSplit), 2 * workspace_bytes(key, off) / 1000000);
}
std::string cluster_off(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("reduce the {} K splits through a global workspace in a second launch: the splits of a tile "
                     "need not be resident on one GPC at once",
                     param(p, kSplit));
}

std::string blo_on(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("split B into its TF32 lo parts once per call ({} MB, a first launch) instead of in each of "
                     "the {} CTAs for every k tile: the producer warpgroup only copies, and the lo tile travels in the "
                     "stage",
                     blo_floats(key) * 4 / 1000000, tiles_of(key, p) * param(p, kSplit));
}
std::string blo_off(const GemmKey&, const Target&, const Params&) {
  return "split B in every CTA's producer warpgroup again: one launch fewer, and no wait on it before the first "
         "k tiles";
}

std::string tail_on(const GemmKey& key, const Target& t, const Params& p) {
  const long long s = tail_split(key, t, p);
  return fmt::format("split the {} tiles of the partial last wave ({} tiles on {} SMs) into {} k ranges each, summed "
                     "by a second launch: the last wave takes {:.2f} of a tile's time instead of a whole one",
                     tail_tiles(key, t, p), tiles_of(key, p), t.sms, s,
                     static_cast<double>(ceil_div(tail_tiles(key, t, p) * s, t.sms * ctas_per_sm(key, t, p))) / s);
}
std::optional<Params> tail_on_apply(const GemmKey& key, const Target& t, const Params& p) {
  if (param(p, kTail) > 1 || param(p, kSplit) != 1 || param(p, kCluster) || param(p, kBlo)) return std::nullopt;
  const long long s = tail_split(key, t, p);
  if (s < 2) return std::nullopt;
  Params out = p;
  out[kTail] = s;
  return out;
}
std::string tail_off(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("leave the partial last wave whole: no {}-way split of its tiles and no second launch",
                     param(p, kTail));
}
std::optional<Params> tail_off_apply(const GemmKey&, const Target&, const Params& p) {
  if (param(p, kTail) <= 1) return std::nullopt;
  Params out = p;
  out[kTail] = 1;
  return out;
}

std::string sk_on(const GemmKey& key, const Target& t, const Params& p) {
  const long long room = t.sms * ctas_per_sm(key, t, p);
  Params q = p;
  q[kSplit] = 1;
  return fmt::format("stream-K: {} CTAs (one wave) take {:.1f} k tiles each of the {} tiles' {} in one run, instead "
                     "of {} CTAs in {:.2f} waves",
                     room, static_cast<double>(sk_units(key, q)) / room, tiles_of(key, p), ceil_div(key.k, kTileK),
                     tiles_of(key, p) * param(p, kSplit),
                     static_cast<double>(tiles_of(key, p) * param(p, kSplit)) / room);
}
std::optional<Params> sk_on_apply(const GemmKey& key, const Target& t, const Params& p) {
  if (param(p, kSk) || param(p, kWs) != 1 || key.batch != 1) return std::nullopt;
  return as_stream_k(p, t.sms * ctas_per_sm(key, t, p));
}
std::string sk_off(const GemmKey& key, const Target& t, const Params& p) {
  Params q = p;
  q[kSk] = 0;
  return fmt::format("split-K in {} instead of stream-K: whole k ranges per CTA, and the producer's plans fixed for "
                     "the CTA",
                     split_to_fill(key, t, q));
}
std::optional<Params> sk_off_apply(const GemmKey& key, const Target& t, const Params& p) {
  if (!param(p, kSk)) return std::nullopt;
  Params out = p;
  out[kSk] = 0;
  out.erase(kSkb);
  out.erase(kPp);
  out.erase(kTmast);
  out.erase(kTmal);
  out[kSplit] = split_to_fill(key, t, out);
  return out;
}

std::string f16s_on(const GemmKey& key, const Target&, const Params&) {
  if (key.precision == PrecisionClass::tf32)
    return fmt::format("run the TF32 products as one f16 wgmma product at twice TF32's rate: x = hi / s with f16 hi "
                       "(11 significant bits, as TF32) and a power-of-two scale per row of A and k tile and per "
                       "column of B; B's halves written once per call ({} MB, a first launch)",
                       b16_floats(key) * 4 / 1000000);
  return fmt::format("run the split's three products on f16 wgmmas at twice TF32's rate: x = (hi + lo) / s with f16 "
                     "hi and lo (11 significant bits, as TF32) and a power-of-two scale per row of A and k tile and per "
                     "column of B; B's halves written once per call ({} MB, a first launch)",
                     b16_floats(key) * 4 / 1000000);
}
std::optional<Params> f16s_on_apply(const GemmKey& key, const Target&, const Params& p) {
  const long long bn = param(p, kBn);
  if (param(p, kF16s) || param(p, kWs) != 1 || param(p, kWg) != 2 || (bn != 32 && bn != 64 && bn != 128) ||
      param(p, kSk) || param(p, kCluster) || f16s_split_too_fine(key))
    return std::nullopt;
  Params out = p;
  out[kF16s] = 1;
  out[k3x] = key.precision == PrecisionClass::f32 ? 1 : 0;
  out[kPromote] = 1;
  out[kBlo] = 0;
  return out;
}
std::string tmal_on(const GemmKey&, const Target&, const Params&) {
  return "copy A's and B's k tiles by the TMA: one thread issues two swizzled boxes a stage from tensor maps built "
         "on the device, instead of the producer warpgroup's cp.async with bounds arithmetic per 16 bytes";
}
std::optional<Params> tmal_on_apply(const GemmKey& key, const Target&, const Params& p) {
  if (param(p, kTmal) || !tma_loads_fit(key, p)) return std::nullopt;
  Params out = p;
  out[kTmal] = 1;
  return out;
}
std::string tmal_off(const GemmKey&, const Target&, const Params&) {
  return "copy the k tiles with the producer warpgroup's cp.async again: no tensor maps to build before the first "
         "copy, and 256 bytes less workspace a CTA";
}
std::optional<Params> tmal_off_apply(const GemmKey&, const Target&, const Params& p) {
  if (!param(p, kTmal)) return std::nullopt;
  Params out = p;
  out.erase(kTmal);
  return out;
}

std::string f16s_off(const GemmKey&, const Target&, const Params&) {
  return "run the products on TF32 wgmmas again: no scales, no first launch, B copied as it is";
}
std::optional<Params> f16s_off_apply(const GemmKey&, const Target&, const Params& p) {
  if (!param(p, kF16s)) return std::nullopt;
  Params out = p;
  out[kF16s] = 0;
  return out;
}

const IdeaMove kIdeas[] = {
    {"wg_tiled", "wg.split_double", split_double, scale_param<kSplit, 2, 1, 1, kMaxSplit>},
    {"wg_tiled", "wg.split_half", split_half, scale_param<kSplit, 1, 2, 1, kMaxSplit>},
    {"wg_tiled", "wg.stages_up", stages_up, step_param<kStages, 1, 4, 8>},
    {"wg_tiled", "wg.stages_down", stages_down, step_param<kStages, -1, 4, 8>},
    {"wg_tiled", "wg.bn_half", bn_half, scale_param<kBn, 1, 2, 64, 128>},
    {"wg_tiled", "wg.bn_double", bn_double, scale_param<kBn, 2, 1, 64, 128>},
    {"wg_tiled", "wg.wg_double", wg_double, scale_param<kWg, 2, 1, 1, 2>},
    {"wg_tiled", "wg.wg_half", wg_half, scale_param<kWg, 1, 2, 1, 2>},
    {"wg_tiled", "wg.promote_two", promote_two, step_param<kPromote, 1, 1, 2>},
    {"wg_tiled", "wg.promote_one", promote_one, step_param<kPromote, -1, 1, 2>},
    {"wg_tiled", "wg.late_on", late_on, step_param<kLate, 1, 0, 1>},
    {"wg_tiled", "wg.late_off", late_off, step_param<kLate, -1, 0, 1>},
    {"wg_tiled", "wg.ws_on", ws_on, step_param<kWs, 1, 0, 1>},
    {"wg_tiled", "wg.ws_off", ws_off, step_param<kWs, -1, 0, 1>},
    {"wg_tiled", "wg.cluster_on", cluster_on, step_param<kCluster, 1, 0, 1>},
    {"wg_tiled", "wg.cluster_off", cluster_off, step_param<kCluster, -1, 0, 1>},
    {"wg_tiled", "wg.blo_on", blo_on, step_param<kBlo, 1, 0, 1>},
    {"wg_tiled", "wg.blo_off", blo_off, step_param<kBlo, -1, 0, 1>},
    {"wg_tiled", "wg.tail_on", tail_on, tail_on_apply},
    {"wg_tiled", "wg.tail_off", tail_off, tail_off_apply},
    {"wg_tiled", "wg.sk_on", sk_on, sk_on_apply},
    {"wg_tiled", "wg.sk_off", sk_off, sk_off_apply},
    {"wg_tiled", "wg.f16s_on", f16s_on, f16s_on_apply},
    {"wg_tiled", "wg.f16s_off", f16s_off, f16s_off_apply},
    {"wg_tiled", "wg.tmal_on", tmal_on, tmal_on_apply},
    {"wg_tiled", "wg.tmal_off", tmal_off, tmal_off_apply},
};

Family make_family() {
  Family f{"wg_tiled", "kd_wg_tiled", embedded_kernel("wg_tiled.cu"), wg_rejects, wg_seeds, wg_complete, wg_valid,
           wg_plan};
  f.pdl_first = true;
  return f;
}

}  // namespace

Params as_stream_k(Params p, long long ctas) {
  p[kSk] = ctas;
  p[kSplit] = 1;
  p[kPromote] = 1;
  p[kTail] = 1;
  p[kBlo] = 0;
  p[kCluster] = 0;
  return p;
}

const Family& wg_tiled_family() {
  static const Family family = make_family();
  return family;
}

std::span<const IdeaMove> wg_tiled_ideas() { return kIdeas; }

}  // namespace kd::builtin
