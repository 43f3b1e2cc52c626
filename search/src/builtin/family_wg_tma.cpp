#include "builtin/family_wg_tma.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "builtin/embedded_kernels.hpp"
#include "builtin/family_rules.hpp"
#include "builtin/kernels/wg_tma_layout.cuh"
#include "builtin/param_names.hpp"

namespace kd::builtin {
namespace {

using namespace param_names;

constexpr long long kTileK = 64;  // 16-bit elements per k tile: one 128-byte swizzle row
// Splits are reduced in a cluster, whose portable size is 8.
constexpr long long kMaxSplit = 8;
// Narrower outputs are mostly padding in a 64-column tile; the skinny families stream them. So an
// exact key of such n is declined (tma_declines), not rejected: the TMA zero-fills B's rows past n
// and C's columns past n are never stored, so a range reaching below 48 (17..32, 33..64) may still
// be served by one of these kernels where the range gate's timing says so (issue 29).
constexpr long long kMinN = 48;
// The TMA's coordinates and the tensor map's dimensions are 32-bit.
constexpr long long kMaxDim = 0x7fffffffLL;

// The kernel's layout of `p`: shared memory and workspace, from the header the kernel compiles too
// (kernels/wg_tma_layout.cuh).
kd_wg_tma_layout layout_of(const Params& p) {
  return {param(p, kWg), param(p, kMw), param(p, kBn), param(p, kStages), param(p, kSplit16) == 2 ? 1 : 0};
}
long long bm_of(const Params& p) { return layout_of(p).bm(); }
long long tiles_of(const GemmKey& key, const Params& p) {
  return ceil_div(key.m, bm_of(p)) * ceil_div(key.n, param(p, kBn)) * key.batch;
}
long long ctas_of(const GemmKey& key, const Params& p) { return tiles_of(key, p) * param(p, kSplit); }
long long stage_bytes(const Params& p) { return layout_of(p).stage_bytes(); }
long long smem_bytes(const Params& p) { return layout_of(p).smem_bytes(); }
// KD_SPLIT16: the maps, then the operands' f16 copies and their rows' shifts (and with KD_SPLIT16 = 2
// the copies of the rests).
kd_tma16_ws split16_layout(const GemmKey& key, const Params& p) {
  return kd_tma16_layout(layout_of(p).workspace_bytes(ctas_of(key, p)), key.batch, key.m, key.n, key.k,
                         param(p, kSplit16) == 2);
}
// KD_COPY_CLUSTER: the first launch's cluster size; records made before it existed ran clusters of 8.
long long copy_cluster(const Params& p) {
  const long long c = param(p, kCopyCluster);
  return c == 0 ? 8 : c;
}
// KD_COPY_ROWS: the rows of a row group whose rows are contiguous across k (ta = N's A, tb = T's B);
// records made before it existed used 32.
long long copy_rows(const Params& p) {
  const long long r = param(p, kCopyRows);
  return r == 0 ? 32 : r;
}
// Whether an operand's rows are contiguous across k (ta = N's A, tb = T's B): the copies' rows path.
bool rows_across_k(const GemmKey& key) { return key.ta == Transpose::N || key.tb == Transpose::T; }
// The smallest cluster that keeps each operand's k split what a cluster of 8 gives it (as few blocks
// per row group as hold their chunk in registers): a cluster launch costs the first launch about 2 us
// over a plain one, and a cluster larger than the splits buys nothing (1024^3 TN: copies 7.3 against
// 5.1 us, the call 21.0 against 19.1; H200, session 37), while reading a row twice instead of splitting
// it costs more (1024^3 NN copies 10.9 against 8.1).
long long min_copy_cluster(const GemmKey& key, long long rows) {
  const long long c = kd_tma16_cluster_max();
  return std::max(kd_tma16_ksplit(key.ta == Transpose::T, key.k, c, rows),
                  kd_tma16_ksplit(key.tb == Transpose::N, key.k, c, rows));
}
long long copy_blocks(const GemmKey& key, long long cluster, long long rows) {
  return kd_tma16_blocks(key.ta == Transpose::T, key.batch, key.m, key.k, cluster, rows) +
         kd_tma16_blocks(key.tb == Transpose::N, key.batch, key.n, key.k, cluster, rows);
}
long long workspace_bytes(const GemmKey& key, const Params& p) {
  if (param(p, kSplit16) >= 1) return split16_layout(key, p).end;
  return layout_of(p).workspace_bytes(ctas_of(key, p));
}
long long ctas_per_sm(const Target& t, const Params& p) {
  return std::max(1LL, (t.smem_optin_bytes + 1024LL) / (smem_bytes(p) + 1024));
}
// The deepest ring (at most `cap` stages) with which `cps` CTAs share an SM (each CTA also costs the
// 1 KB the driver reserves per block).
long long stages_for(const Target& t, const Params& p, long long cps, long long cap) {
  const kd_wg_tma_layout l = layout_of(p);
  const long long budget = (t.smem_optin_bytes + 1024LL) / cps - 1024 - l.smem_fixed_bytes();
  return std::min(cap, budget / l.smem_stage_bytes());
}

std::optional<std::string> tma_rejects(const GemmKey& key) {
  if ((key.a != DType::bf16 && key.a != DType::f16) || key.b != key.a)
    return "bf16 or f16 inputs of one type only (f32 goes to wg_tiled)";
  if (key.ta != Transpose::T || key.tb != Transpose::N) return "needs ta=T tb=N (k contiguous in A and B)";
  if (key.k < 1) return "needs k >= 1";
  if (key.lda % 8 || key.ldb % 8) return "lda and ldb must be multiples of 8 (16-byte TMA row strides)";
  if (key.batch > 1 && (key.stride_a % 8 || key.stride_b % 8)) return "batch strides must keep 16-byte alignment";
  if (key.m > kMaxDim || key.n > kMaxDim || key.k > kMaxDim) return "m, n and k must be below 2^31 (TMA coordinates)";
  return std::nullopt;
}

std::optional<std::string> tma_declines(const GemmKey& key) {
  if (key.n < kMinN)
    return fmt::format("n={} is below {}: a 64-column wgmma tile would be mostly padding", key.n, kMinN);
  return std::nullopt;
}

Params tile(long long wg, long long mw, long long bn, long long split) {
  return {{kWg, wg}, {kMw, mw}, {kBn, bn}, {kStages, 4}, {kSplit, split}, {kCluster, split > 1 ? 1 : 0}, {kCtas, 1}};
}
// Whether the kernel's registers fit two CTAs per SM: the launch bound then gives 80 registers per
// thread with two consumer warpgroups (ptxas cannot fit a 64-column accumulator in that: at most
// m64n64 per warpgroup) and 128 with one (the producer's share moves to the consumer by setmaxnreg).
bool regs_fit_two(const Params& p) { return param(p, kWg) == 1 || param(p, kMw) * param(p, kBn) <= 64; }

// The k splits are a cluster: KD_CLUSTER follows KD_SPLITK.
Params tma_complete(const GemmKey&, const Target&, Params p) {
  if (param(p, kSplit) < 1) p[kSplit] = 1;
  p[kCluster] = param(p, kSplit) > 1 ? 1 : 0;
  if (param(p, kCtas) < 1) p[kCtas] = 1;
  return p;
}

bool tma_valid(const GemmKey& key, const Target& t, const Params& p) {
  // wgmma, TMA and tensormap.replace exist only on compute capability 9.0 (sm_90a).
  if (t.arch != "sm_90" && t.arch != "sm_90a") return false;
  const long long wg = param(p, kWg), mw = param(p, kMw), bn = param(p, kBn);
  const long long stages = param(p, kStages), split = param(p, kSplit), cluster = param(p, kCluster);
  if ((wg != 1 && wg != 2) || (mw != 1 && mw != 2) || (bn != 64 && bn != 128 && bn != 256)) return false;
  if (mw * bn > 256) return false;  // at most 128 accumulator registers per thread
  if (stages < 2 || stages > 8) return false;
  if (split < 1 || split > kMaxSplit || split > ceil_div(key.k, kTileK)) return false;
  if (cluster != (split > 1 ? 1 : 0)) return false;
  // Shared maps are built by the first launch, which only the f16 copies have; so are its row groups.
  if ((param(p, kSharedMaps) != 0 || param(p, kCopyRows) != 0) && param(p, kSplit16) == 0) return false;
  // The cluster's partial tile (f32) is staged in the CTA's own ring.
  if (split > 1 && !layout_of(p).partial_tile_fits()) return false;
  if (ceil_div(key.m, bm_of(p)) > 65535 || key.batch * split > 65535) return false;
  // KD_CTAS = 2 sizes registers and shared memory for two CTAs per SM.
  const long long ctas = param(p, kCtas);
  if (ctas != 1 && ctas != 2) return false;
  if (ctas == 2 && (!regs_fit_two(p) || 2 * (smem_bytes(p) + 1024) > t.smem_optin_bytes + 1024LL)) return false;
  return smem_bytes(p) <= t.smem_optin_bytes;
}

LaunchPlan tma_plan(const GemmKey& key, const Target&, const Params& p) {
  LaunchPlan plan;
  LaunchSpec main;
  if (param(p, kSplit16) >= 1) {
    LaunchSpec split;
    split.entry = "kd_wg_tma_split16";
    split.grid = {u32(copy_blocks(key, copy_cluster(p), copy_rows(p))), 1, 1};
    split.block = {256, 1, 1};
    plan.launches.push_back(split);
    main.pdl = true;
  }
  main.entry = "kd_wg_tma";
  main.grid = {u32(ceil_div(key.n, param(p, kBn))), u32(ceil_div(key.m, bm_of(p))), u32(key.batch * param(p, kSplit))};
  main.block = {u32(layout_of(p).threads()), 1, 1};
  main.smem_bytes = u32(smem_bytes(p));
  plan.launches.push_back(main);
  plan.workspace_bytes = static_cast<std::uint64_t>(workspace_bytes(key, p));
  return plan;
}

// The wave model that ranks round-0 configurations (not yet measurements): an SM that holds c CTAs
// over the kernel's life takes c times a CTA's work, a CTA's work is its tile's multiply-adds over its
// k range, and a tile streams operands at (BM + BN) per BM x BN outputs, so tiles with a reuse
// BM * BN / (BM + BN) below 64 (128 x 128) are charged as proportionally slower. Splits in a cluster
// add the partial tiles' exchange (charged 3% per doubling).
double wave_cost(const GemmKey& key, const Target& t, const Params& p) {
  const double bm = static_cast<double>(bm_of(p)), bn = static_cast<double>(param(p, kBn));
  const long long split = param(p, kSplit);
  const double reuse = std::min(1.0, bm * bn / (bm + bn) / 64.0);
  const double kper = static_cast<double>(ceil_div(ceil_div(key.k, kTileK), split));
  double cost = static_cast<double>(ceil_div(ctas_of(key, p), t.sms)) * bm * bn * kper / reuse;
  for (long long sp = split; sp > 1; sp /= 2) cost *= 1.03;
  return cost;
}

struct Scored {
  double cost;
  Params p;
};
// The three of lowest cost, the first listed first among equals.
std::vector<Params> cheapest_three(std::vector<Scored> scored) {
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) { return a.cost < b.cost; });
  std::vector<Params> out;
  for (Scored& s : scored) {
    if (out.size() >= 3) break;
    out.push_back(std::move(s.p));
  }
  return out;
}

// Round-0 configurations of wg_tma, ranked by wave_cost. Clusters of four are seeded only with rings
// small enough for two CTAs per SM: at one CTA per SM the H200 holds 66 clusters of two but only 30
// of four (docs/kernel-notes.md).
std::vector<Params> tma_seeds(const GemmKey& key, const Target& t) {
  std::vector<Scored> scored;
  const long long shapes[][3] = {{2, 1, 128}, {2, 1, 256}, {1, 1, 128}, {2, 1, 64},
                                 {1, 2, 128}, {1, 1, 256}, {1, 1, 64}, {2, 2, 64}};
  for (const auto& s : shapes) {
    const long long bn = s[2];
    // At most a quarter of the tile's columns as padding (n = 64 keeps 64-column tiles).
    if (ceil_div(key.n, bn) * bn * 3 > key.n * 4 && bn > 64) continue;
    for (long long split : {1LL, 2LL, 4LL}) {
      Params p = tile(s[0], s[1], bn, split);
      // Split only a grid that leaves SMs idle, keeping at least 8 k tiles per split.
      if (split > 1 && (tiles_of(key, p) >= t.sms || ceil_div(key.k, kTileK) / split < 8)) continue;
      // A grid deeper than the SMs, or clusters of four, run two CTAs per SM where a ring of three
      // stages still fits; clusters of four need that room.
      const long long ctas = ctas_of(key, p);
      const bool two = (ctas > t.sms || split > 2) && regs_fit_two(p) && stages_for(t, p, 2, 6) >= 3;
      if (split > 2 && !two) continue;
      p[kStages] = stages_for(t, p, two ? 2 : 1, 6);
      p[kCtas] = two ? 2 : 1;
      p = tma_complete(key, t, p);
      if (!tma_valid(key, t, p)) continue;
      const double cost = wave_cost(key, t, p);
      scored.push_back({cost, std::move(p)});
    }
  }
  return cheapest_three(std::move(scored));
}

// ---- ideas ------------------------------------------------------------------------------------

std::string split_double(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("split K over a cluster of {} CTAs per tile: {} CTAs are {:.2f} waves on {} SMs, the partial "
                     "tiles summed through distributed shared memory",
                     2 * param(p, kSplit), 2 * ctas_of(key, p), static_cast<double>(2 * ctas_of(key, p)) / t.sms,
                     t.sms);
}
std::string split_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("halve the K split to {}: {} CTAs ({:.2f} waves on {} SMs), {} KB less partial-tile exchange per "
                     "tile",
                     param(p, kSplit) / 2, ctas_of(key, p) / 2, static_cast<double>(ctas_of(key, p) / 2) / t.sms,
                     t.sms, bm_of(p) * param(p, kBn) * 4 * (param(p, kSplit) / 2) / 1024);
}
std::string stages_up(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("deepen the TMA ring to {} stages: {} KB of k tiles in flight per CTA to cover DRAM latency",
                     param(p, kStages) + 1, (param(p, kStages) + 1) * stage_bytes(p) / 1024);
}
std::string stages_down(const GemmKey&, const Target& t, const Params& p) {
  Params fewer = p;
  fewer[kStages] = param(p, kStages) - 1;
  return fmt::format("shorten the ring to {} stages: {} KB of shared memory instead of {} KB, {} CTA(s) per SM",
                     param(fewer, kStages), smem_bytes(fewer) / 1024, smem_bytes(p) / 1024, ctas_per_sm(t, fewer));
}
std::string bn_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("m64n{} wgmmas: {} tiles instead of {} for {} SMs", param(p, kBn) / 2,
                     ceil_div(key.m, bm_of(p)) * ceil_div(key.n, param(p, kBn) / 2) * key.batch, tiles_of(key, p), t.sms);
}
std::string bn_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("m64n{} wgmmas: A ({} MB) is read {} times instead of {}", 2 * param(p, kBn),
                     key.m * key.k * 2 / 1000000, ceil_div(key.n, 2 * param(p, kBn)), ceil_div(key.n, param(p, kBn)));
}
std::string wg_double(const GemmKey& key, const Target&, const Params& p) {
  return fmt::format("two consumer warpgroups: {}-row tiles, B ({} MB) read {} times instead of {}", 2 * bm_of(p),
                     key.n * key.k * 2 / 1000000, ceil_div(key.m, 2 * bm_of(p)), ceil_div(key.m, bm_of(p)));
}
std::string wg_half(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("one consumer warpgroup: {}-row tiles, {} tiles instead of {} for {} SMs", bm_of(p) / 2,
                     ceil_div(key.m, bm_of(p) / 2) * ceil_div(key.n, param(p, kBn)) * key.batch, tiles_of(key, p),
                     t.sms);
}
std::string ctas_two(const GemmKey& key, const Target& t, const Params& p) {
  return fmt::format("size registers and shared memory for two CTAs per SM: one CTA's TMA waits and epilogue overlap "
                     "the other's wgmmas, {} CTAs in {:.2f} waves of {}",
                     ctas_of(key, p), static_cast<double>(ctas_of(key, p)) / (2 * t.sms), 2 * t.sms);
}
// Two CTAs per SM, the ring shortened to fit where needed.
std::optional<Params> to_two_ctas(const GemmKey&, const Target& t, const Params& p) {
  if (param(p, kCtas) != 1 || !regs_fit_two(p)) return std::nullopt;
  Params out = p;
  out[kCtas] = 2;
  out[kStages] = std::min(param(p, kStages), stages_for(t, p, 2, 8));
  if (param(out, kStages) < 2) return std::nullopt;
  return out;
}
std::string ctas_one(const GemmKey&, const Target&, const Params&) {
  return "size registers and shared memory for one CTA per SM: a deeper ring and the consumers' full register "
         "share";
}
std::string mw_double(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("two m64 blocks per warpgroup: each B descriptor feeds {} rows, {} accumulators per thread",
                     128, param(p, kBn));
}
std::string mw_half(const GemmKey&, const Target&, const Params& p) {
  return fmt::format("one m64 block per warpgroup: {} accumulators per thread instead of {}", param(p, kBn) / 2,
                     param(p, kBn));
}

const IdeaMove kIdeas[] = {
    {"wg_tma", "tma.split_double", split_double, scale_param<kSplit, 2, 1, 1, kMaxSplit>},
    {"wg_tma", "tma.split_half", split_half, scale_param<kSplit, 1, 2, 1, kMaxSplit>},
    {"wg_tma", "tma.stages_up", stages_up, step_param<kStages, 1, 2, 8>},
    {"wg_tma", "tma.stages_down", stages_down, step_param<kStages, -1, 2, 8>},
    {"wg_tma", "tma.bn_half", bn_half, scale_param<kBn, 1, 2, 64, 256>},
    {"wg_tma", "tma.bn_double", bn_double, scale_param<kBn, 2, 1, 64, 256>},
    {"wg_tma", "tma.wg_double", wg_double, scale_param<kWg, 2, 1, 1, 2>},
    {"wg_tma", "tma.wg_half", wg_half, scale_param<kWg, 1, 2, 1, 2>},
    {"wg_tma", "tma.ctas_two", ctas_two, to_two_ctas},
    {"wg_tma", "tma.ctas_one", ctas_one, step_param<kCtas, -1, 1, 2>},
    {"wg_tma", "tma.mw_double", mw_double, scale_param<kMw, 2, 1, 1, 2>},
    {"wg_tma", "tma.mw_half", mw_half, scale_param<kMw, 1, 2, 1, 2>},
};

// ---- wg_tma_f32 -----------------------------------------------------------------------------

// What both f16-copy families need of a key beyond its precision class.
std::optional<std::string> split16_rejects(const GemmKey& key) {
  if (key.k < 1) return "needs k >= 1";
  if (key.m > kMaxDim || key.n > kMaxDim || key.k > kMaxDim) return "m, n and k must be below 2^31 (TMA coordinates)";
  // The first launch's grid: blocks per 8 k-contiguous rows or per 32 rows contiguous across k, times
  // the blocks each row's k is split over (kernels/wg_tma_layout.cuh), for both operands. (Groups of 8
  // rows contiguous across k are taken only where their grid fits too: split16_complete.)
  if (copy_blocks(key, kd_tma16_cluster_max(), 32) > kMaxDim)
    return "more rows than the first launch's grid holds";
  return std::nullopt;
}

std::optional<std::string> f32_rejects(const GemmKey& key) {
  if (key.a != DType::f32 || key.b != DType::f32 || key.c != DType::f32) return "f32 A, B and C only";
  if (key.precision != PrecisionClass::tf32)
    return "strict fp32: one f16 product keeps TF32's 11 significant bits only (the TF32 class)";
  return split16_rejects(key);
}

// Below 48 rows or columns a 64-wide wgmma tile is mostly padding, and the copies (a read of A and B
// and a write of half their bytes) cost what such a call's whole product does.
std::optional<std::string> f32_declines(const GemmKey& key) {
  if (key.n < kMinN || key.m < kMinN)
    return fmt::format("m={} n={}: below {} a 64-wide wgmma tile is mostly padding", key.m, key.n, kMinN);
  return std::nullopt;
}

// wg_tma's completion with KD_SPLIT16 fixed: 1 for the TF32 class, 2 for strict f32.
template <long long Split16>
Params split16_complete(const GemmKey& key, const Target& t, Params p) {
  p = tma_complete(key, t, std::move(p));
  p[kSplit16] = Split16;
  // Rows contiguous across k are copied in groups of 8, as many and as large as the k-contiguous path's
  // (a group of 32 holds a quarter of the k, so at m = 1024 there were 64 blocks, each twice the bytes
  // of the other operand's 128): 1024^3 NN 19.59 -> 19.23 us, 2048^3 NN 100.5 -> 98.4, 4096^3 NN
  // 756 -> 750 (H200, session 38). An explicit 32 stays; so does 32 where 8 would overflow the grid.
  if (p.find(kCopyRows) == p.end())
    p[kCopyRows] = copy_blocks(key, kd_tma16_cluster_max(), 8) <= kMaxDim ? 8 : 32;
  p[kCopyCluster] = min_copy_cluster(key, copy_rows(p));
  // The first launch builds each batch entry's tensor maps once, for all of that entry's product CTAs:
  // built by each CTA they cost the call about 1.3-1.9 us at 1024^3 (19.4 against 17.5 us TN, 21.0
  // against 19.7 NN; H200, session 37). An explicit 0 stays (a lab diagnostic that runs the product
  // without the copy launch needs its CTAs' own maps).
  if (p.find(kSharedMaps) == p.end()) p[kSharedMaps] = 1;
  return p;
}
constexpr auto f32_complete = split16_complete<1>;
constexpr auto f16s_complete = split16_complete<2>;

// Any cluster size that divides the portable 8 works: kernel and plan split k by the same rule. Maps
// shared or per CTA.
bool copy_launch_valid(const GemmKey& key, const Params& p) {
  const long long c = copy_cluster(p), shared = param(p, kSharedMaps), rows = copy_rows(p);
  return (c == 1 || c == 2 || c == 4 || c == 8) && (shared == 0 || shared == 1) && (rows == 8 || rows == 32) &&
         copy_blocks(key, c, rows) <= kMaxDim;
}

bool f32_valid(const GemmKey& key, const Target& t, const Params& p) {
  // The epilogue's scales need registers that 128 accumulators at two CTAs per SM leave no room for
  // (ptxas spilled m64n256 per warpgroup there).
  if (param(p, kCtas) == 2 && param(p, kMw) * param(p, kBn) > 128) return false;
  return param(p, kSplit16) == 1 && copy_launch_valid(key, p) && tma_valid(key, t, p);
}

// Where an operand's rows are contiguous across k, the first two seeds once more with that operand's
// rows copied in groups of 32 instead of 8, so that round 0 measures both: neither wins everywhere
// (H200, session 38: groups of 8 took 1024^3 NN 19.59 -> 19.23 us and 2048^3 NN 100.5 -> 98.4, but
// 1024^3 NT, both operands on that path, ran 19.2-19.4 us with 32 against 19.7-20.1 with 8, and the
// TF32 class's NT 15.6 against 17.3), and a search of a few seconds a shape does not reach the moves.
template <typename Complete, typename Valid>
void add_rows32_seeds(const GemmKey& key, const Target& t, std::vector<Params>& seeds, Complete complete,
                      Valid valid) {
  if (!rows_across_k(key)) return;
  const std::size_t first = seeds.size() < 2 ? seeds.size() : 2;
  for (std::size_t i = 0; i < first; ++i) {
    Params p = seeds[i];
    if (copy_rows(p) == 32) continue;
    p[kCopyRows] = 32;
    p = complete(key, t, std::move(p));
    if (valid(key, t, p)) seeds.push_back(std::move(p));
  }
}

std::vector<Params> f32_seeds(const GemmKey& key, const Target& t) {
  std::vector<Params> out;
  for (Params p : tma_seeds(key, t)) {
    p = f32_complete(key, t, std::move(p));
    if (f32_valid(key, t, p)) out.push_back(std::move(p));
  }
  add_rows32_seeds(key, t, out, f32_complete, f32_valid);
  return out;
}

Family make_family() {
  Family f{"wg_tma", "kd_wg_tma", embedded_kernel("wg_tma.cu"), tma_rejects, tma_seeds, tma_complete, tma_valid,
           tma_plan};
  // Correct on an H200 (the gate, every lab variant) but faster than cuBLAS on none of the shape
  // file's bf16 shapes (docs/kernel-notes.md, "wg_tma, session 10"): opt-in until it wins one.
  f.trial = true;
  f.declines = tma_declines;
  return f;
}

Family make_f32_family() {
  Family f{"wg_tma_f32", "kd_wg_tma", embedded_kernel("wg_tma.cu"), f32_rejects, f32_seeds, f32_complete, f32_valid,
           tma_plan};
  // Not a trial: correct through the gate in every layout on an H200, and the TF32 class's winner at
  // 4096^3 in all four layouts (1.09-1.71x cuBLAS TF32; docs/kernel-notes.md, session 30). Seeded
  // before wg_tiled, whose TF32 plans lost to cuBLAS TF32 everywhere.
  f.declines = f32_declines;
  // The copies (the first launch) wait on the previous kernel's grid first with KD_PDL = 1.
  f.pdl_first = true;
  return f;
}

// The copy launch's row groups where an operand's rows are contiguous across k. Groups of 8 are the
// completion's choice; where both operands take that path (ta = N, tb = T) groups of 32 in a cluster of
// 2 ran as fast or faster at 1024^3 (19.2-19.3 against 19.7-20.1 us, H200, session 38), so the search
// measures both.
template <long long Rows>
std::optional<Params> copy_rows_to(const GemmKey& key, const Target&, const Params& p) {
  if (!rows_across_k(key) || copy_rows(p) == Rows) return std::nullopt;
  Params out = p;
  out[kCopyRows] = Rows;
  return out;
}
std::string copy_rows_32(const GemmKey&, const Target&, const Params&) {
  return "copy rows contiguous across k in groups of 32, a quarter of the blocks, each row's k split over a "
         "cluster";
}
std::string copy_rows_8(const GemmKey&, const Target&, const Params&) {
  return "copy rows contiguous across k in groups of 8, as many blocks as the k-contiguous rows take";
}

// The moves of wg_tma, once more for another family of its kernel (the same parameters; KD_SPLIT16
// stays as the family's completion sets it), and the moves of the f16 copies' launch.
std::vector<IdeaMove> moves_for(const char* family) {
  std::vector<IdeaMove> out;
  for (IdeaMove m : kIdeas) {
    m.family = family;
    out.push_back(m);
  }
  out.push_back({family, "tma.copy_rows_32", copy_rows_32, copy_rows_to<32>});
  out.push_back({family, "tma.copy_rows_8", copy_rows_8, copy_rows_to<8>});
  return out;
}

// ---- wg_tma_f16s ----------------------------------------------------------------------------

std::optional<std::string> f16s_rejects(const GemmKey& key) {
  if (key.a != DType::f32 || key.b != DType::f32 || key.c != DType::f32) return "f32 A, B and C only";
  if (key.precision != PrecisionClass::f32)
    return "the TF32 class: wg_tma_f32 serves it with one f16 product instead of three";
  if (auto why = split16_rejects(key)) return why;
  // Rejected, not declined, so that a range of narrow outputs does not try it either: copying the
  // other operand (a read and a write of its 4 bytes per element) costs what the whole product does.
  if (key.n < kMinN || key.m < kMinN)
    return fmt::format("m={} n={}: below {} the copies of the wide operand cost what the product does", key.m, key.n,
                       kMinN);
  return std::nullopt;
}

// Small calls: below about 640^3 the copies and the few tiles cost more than three f16 products save
// (serving regime, H200, session 40, the family's best seed against cuBLAS: 640^3 1.6-2.4x, 768^3
// 2.1-2.3x, 1000^3 3.0-3.5x; 512^3 only 1.2x. The limit was 1024^3, from sessions 31-32's slower
// kernels: 777 x 333 x 555 took 20.3 us against cuBLAS's 15.6), and wg_tiled's plans win there.
// Narrow outputs: the copies grow with m + n and the products with m * n, so at 512 columns copying
// the wide operand costs half of what the products do, and wg_tiled's f16 splits, which split that
// operand in registers, win (4096 x 512 x 4096: 112.7 us against this family's 126.0, H200, sessions
// 31-32); its seeds, evaluated first, also spent the search's budget there.
std::optional<std::string> f16s_declines(const GemmKey& key) {
  constexpr double kMinWork = 640.0 * 640.0 * 640.0;
  constexpr long long kNarrowSide = 512;
  const double work = static_cast<double>(key.batch) * key.m * key.n * key.k;
  if (work < kMinWork)
    return fmt::format("batch x m x n x k = {:.3g} is below 640^3: the copies cost more than the products save",
                       work);
  if (std::min(key.m, key.n) <= kNarrowSide)
    return fmt::format("m = {} and n = {}: at 512 or fewer rows or columns copying the other operand costs more "
                       "than wg_tiled's split in registers",
                       key.m, key.n);
  return std::nullopt;
}

// Each k tile's sum is promoted from a second set of accumulators, so a consumer holds 2 * MW * BN / 2
// of them: at most m64n128 per warpgroup. One CTA per SM: a stage (the hi and lo tiles of A and B) is
// 32-64 KB, and two CTAs' rings would be two stages deep.
bool f16s_valid(const GemmKey& key, const Target& t, const Params& p) {
  if (param(p, kMw) * param(p, kBn) > 128 || param(p, kCtas) != 1) return false;
  return param(p, kSplit16) == 2 && copy_launch_valid(key, p) && tma_valid(key, t, p);
}

// Tiles of 128 x 128 first (two consumer warpgroups of m64n128: 3.5x cuBLAS at 4096^3 in the lab,
// session 31), then 128 x 64 and one warpgroup of two m64n64 blocks; splits in a cluster for grids
// under a wave. The deepest ring that fits (three stages at 128 x 128), ranked by the wave model of
// tma_seeds.
std::vector<Params> f16s_seeds(const GemmKey& key, const Target& t) {
  std::vector<Scored> scored;
  const long long shapes[][3] = {{2, 1, 128}, {2, 1, 64}, {1, 2, 64}, {1, 1, 128}};
  for (const auto& s : shapes) {
    for (long long split : {1LL, 2LL, 4LL}) {
      Params p = tile(s[0], s[1], s[2], split);
      if (split > 1 && (tiles_of(key, p) >= t.sms || ceil_div(key.k, kTileK) / split < 8)) continue;
      p[kSplit16] = 2;
      p[kStages] = stages_for(t, p, 1, 6);
      p = f16s_complete(key, t, p);
      if (!f16s_valid(key, t, p)) continue;
      const double cost = wave_cost(key, t, p);
      scored.push_back({cost, std::move(p)});
    }
  }
  std::vector<Params> out = cheapest_three(std::move(scored));
  add_rows32_seeds(key, t, out, f16s_complete, f16s_valid);
  return out;
}

Family make_f16s_family() {
  Family f{"wg_tma_f16s", "kd_wg_tma", embedded_kernel("wg_tma.cu"), f16s_rejects, f16s_seeds, f16s_complete,
           f16s_valid, tma_plan};
  f.declines = f16s_declines;
  f.pdl_first = true;  // as wg_tma_f32's
  return f;
}


}  // namespace

const Family& wg_tma_f16s_family() {
  static const Family family = make_f16s_family();
  return family;
}

std::span<const IdeaMove> wg_tma_f16s_ideas() {
  static const std::vector<IdeaMove> moves = moves_for("wg_tma_f16s");
  return moves;
}

const Family& wg_tma_f32_family() {
  static const Family family = make_f32_family();
  return family;
}

const Family& wg_tma_family() {
  static const Family family = make_family();
  return family;
}

std::span<const IdeaMove> wg_tma_ideas() { return kIdeas; }

std::span<const IdeaMove> wg_tma_f32_ideas() {
  static const std::vector<IdeaMove> moves = moves_for("wg_tma_f32");
  return moves;
}

}  // namespace kd::builtin
