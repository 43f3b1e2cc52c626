#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "builtin/family_wg_tiled.hpp"
#include "builtin/kernels/wg_tiled_layout.cuh"
#include "family_checks.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {
namespace {

using test::completed_seeds;
using test::completed_seeds_with;
using test::key_of;
using test::llama_keys;

// Keys several tests share: a short-k bmm of whole 128 x 128 entries (A with ta = T), and BERT's
// attention values of 64-wide heads (one m64 tile is a whole entry).
constexpr const char* kBmm128 =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=256 "
    "stride_a=16384 stride_b=16384 stride_c=16384 epilogue=none beta0=1";
constexpr const char* kBertValues =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=128 k=128 lda=64 ldb=128 ldc=64 batch=512 "
    "stride_a=8192 stride_b=16384 stride_c=8192 epilogue=none beta0=1";

TEST(WgTiled, RowCarriesItsEmbeddedSource) {
  test::expect_row_source(wg_tiled_family(), "wg_tiled", {"kd_wg_tiled(", "kd_wg_tiled_reduce("});
}

TEST(WgTiled, ServesEveryF32Shape) {
  const Family& f = wg_tiled_family();
  int served = 0;
  for (const GemmKey& key : llama_keys()) {
    const bool want = key.a == DType::f32 && key.lda % 4 == 0;
    EXPECT_EQ(!not_searched_for(f, key).has_value(), want) << key.shape_line();
    served += want;
  }
  EXPECT_EQ(served, 13);  // 4096^3, the four n = 128, the four n = 16 and the four n = 1 shapes
  // 17..47 columns take m64n32 tiles, the producer warpgroup and one wave of CTAs; 16 and 48 columns
  // the tiles on either side.
  const GemmKey n32 = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=32 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  const Target t;
  for (const GemmKey& key : {n32, n32.at_n(17), n32.at_n(47)}) {
    EXPECT_FALSE(not_searched_for(f, key).has_value()) << key.shape_line();
    const auto seeds = completed_seeds(f, key, t);
    ASSERT_FALSE(seeds.empty());
    for (const Params& p : seeds) {
      EXPECT_EQ(p.at("KD_BN"), 32) << describe(p);
      EXPECT_EQ(p.at("KD_WS"), 1) << describe(p);
      EXPECT_TRUE(f.valid(key, t, p)) << describe(p);
    }
  }
  EXPECT_EQ(completed_seeds(f, n32.at_n(16), t).front().at("KD_BN"), 16);
  EXPECT_NE(completed_seeds(f, n32.at_n(48), t).front().at("KD_BN"), 32);
  const Params narrow = completed_seeds(f, n32, t).front();
  EXPECT_FALSE(f.valid(n32.at_n(16), t, narrow)) << "16 columns take m64n16";
  EXPECT_FALSE(f.valid(n32.at_n(48), t, narrow)) << "48 columns take m64n64 or wider";
  Params unspecialized = narrow;
  unspecialized["KD_WS"] = 0;
  EXPECT_FALSE(f.valid(n32, t, unspecialized));
  EXPECT_FALSE(not_searched_for(f, n32.at_n(48)).has_value());
  EXPECT_FALSE(not_searched_for(f, n32.at_n(16)).has_value());
  const GemmKey bf16 = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  ASSERT_TRUE(f.rejects(bf16).has_value());
  EXPECT_NE(f.rejects(bf16)->find("f32"), std::string::npos);
  const GemmKey odd_ld = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1");
  EXPECT_TRUE(f.rejects(odd_ld).has_value());
}

// Stream-K's workspace slots, counted unit by unit (the family and the kernel use a closed form): the
// most CTAs whose ranges of tile-major k-tile units touch one tile.
long long stream_k_slots(const GemmKey& key, const Params& p) {
  const long long bm = 64 * p.at("KD_WG"), bn = p.at("KD_BN"), ctas = p.at("KD_SK");
  const long long kt = (key.k + 31) / 32, tiles = (key.m + bm - 1) / bm * ((key.n + bn - 1) / bn);
  const long long units = tiles * kt;
  std::vector<long long> first(tiles, -1), last(tiles, -1);
  for (long long c = 0; c < ctas; ++c)
    for (long long u = c * units / ctas; u < (c + 1) * units / ctas; ++u) {
      if (first[u / kt] < 0) first[u / kt] = c;
      last[u / kt] = c;
    }
  long long most = 1;
  for (long long t = 0; t < tiles; ++t) most = std::max(most, last[t] - first[t] + 1);
  return most;
}

// `p` with one parameter changed.
Params with(Params p, const char* name, long long v) {
  p[name] = v;
  return p;
}

TEST(WgTiled, SeedsAreValidOnHopperOnlyAndThePlanInTheSourceMatches) {
  const Family& f = wg_tiled_family();
  const Target t;
  test::check_hopper_seeds(f, t, [&](const GemmKey& key, const Params& p, const LaunchPlan& lp) {
    EXPECT_EQ(p.at("KD_3XTF32"), 1) << "strict fp32 needs error compensation";
    const bool split = p.at("KD_SPLITK") > 1, tail = p.at("KD_TAIL") > 1;
    const long long sk_slots = p.at("KD_SK") ? stream_k_slots(key, p) : 1;
    const bool workspace = (split && p.at("KD_CLUSTER") == 0) || tail || sk_slots > 1;
    const bool blo = p.at("KD_BLO") == 1, f16s = p.at("KD_F16S") == 1;
    EXPECT_EQ(lp.launches.size(), (workspace ? 2u : 1u) + (blo || f16s ? 1u : 0u));
    const long long parts = tail ? p.at("KD_TAIL") : sk_slots > 1 ? sk_slots : p.at("KD_SPLITK");
    const long long partials = workspace ? parts * key.m * key.n * 4 : 0;
    const long long lo = blo ? key.n * ((key.k + 3) / 4 * 4) * 4 : 0;
    // KD_F16S: a 128-byte row of halves per column and k tile, then a scale per column.
    const long long halves = f16s ? key.n * ((key.k + 31) / 32 * 32 + 1) * 4 : 0;
    const long long aligned = f16s ? (partials + 127) / 128 * 128 : blo ? (partials + 15) / 16 * 16 : partials;
    EXPECT_EQ(lp.workspace_bytes, static_cast<std::uint64_t>(aligned + lo + halves));
    const LaunchSpec& main = lp.launches[blo || f16s ? 1 : 0];
    EXPECT_EQ(main.entry, "kd_wg_tiled");
    EXPECT_EQ(main.pdl, blo || f16s) << "with KD_BLO or KD_F16S the main kernel waits on the split of B";
    if (blo) {
      EXPECT_EQ(lp.launches[0].entry, "kd_wg_split_b");
    }
    if (f16s) {
      EXPECT_EQ(lp.launches[0].entry, "kd_wg_split_b16");
      EXPECT_EQ(lp.launches[0].grid[0], static_cast<std::uint32_t>(key.n)) << "one block per column of B (tb = N)";
      EXPECT_EQ(lp.launches[0].block[0], 256u);
    }
    const auto& g = main.grid;
    EXPECT_GE(static_cast<long long>(g[0]) * g[1] * g[2], t.sms / 2) << key.shape_line() << " " << describe(p);
    // The lab's winners on every served shape are warp-specialized: a producer warpgroup on top.
    EXPECT_EQ(p.at("KD_WS"), 1) << describe(p);
    EXPECT_EQ(main.block[0], 128u * (p.at("KD_WG") + 1));
    // Outputs of up to 16 columns take m64n16 wgmmas; a k split stops at one wave of CTAs.
    EXPECT_EQ(p.at("KD_BN") == 16, key.n <= 16) << describe(p);
    if (key.n <= 16 && split) {
      EXPECT_LE(static_cast<long long>(g[0]) * g[1] * g[2], 3LL * t.sms) << describe(p);
    }
  });
}

TEST(WgTiled, Tf32CallsMayDropCompensationStrictOnesMayNot) {
  const Family& f = wg_tiled_family();
  const Target t;
  const std::string shape = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
  const GemmKey strict = key_of(shape);
  const GemmKey tf32 = key_of(shape + " precision=tf32");
  Params p = completed_seeds(f, strict, t).front();
  p["KD_3XTF32"] = 0;
  EXPECT_FALSE(f.valid(strict, t, p));
  EXPECT_EQ(f.complete(strict, t, p).at("KD_3XTF32"), 1);
  EXPECT_TRUE(f.valid(tf32, t, f.complete(tf32, t, p)));
  EXPECT_EQ(completed_seeds(f, tf32, t).front().at("KD_3XTF32"), 0);
}

// KD_CLUSTER: the splits of a tile reduce in a thread-block cluster, so the plan is one launch with no
// workspace; it needs the producer warpgroup and 2..8 splits (a portable cluster).
TEST(WgTiled, ClusterSplitIsOneLaunchWithoutWorkspace) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=1000 k=1000 lda=1000 ldb=1000 ldc=1000 batch=1 epilogue=none beta0=1");
  const auto seeds = completed_seeds(f, key, t);
  const auto it = std::find_if(seeds.begin(), seeds.end(), [](const Params& p) { return p.at("KD_CLUSTER") == 1; });
  ASSERT_NE(it, seeds.end()) << "8x8 tiles of 128x128 leave SMs idle: one seed reduces two splits in a cluster";
  const Params p = *it;
  EXPECT_EQ(p.at("KD_SPLITK"), 2);
  const LaunchPlan plan = f.plan(key, t, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].grid[2], 2u);
  EXPECT_EQ(plan.workspace_bytes, 0u);
  EXPECT_EQ(std::get<LaunchPlan>(parse_plan_from_source(render(f, key, t, p))), plan);
  EXPECT_TRUE(f.valid(key, t, with(p, "KD_SPLITK", 8)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SPLITK", 16))) << "beyond the portable cluster size";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SPLITK", 1))) << "nothing to reduce";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_WS", 0))) << "the reduction lives in the warp-specialized kernel";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_CLUSTER", 2)));
  // The 4096^3 shape fills the GPU without a split: no cluster seed.
  const GemmKey big = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  for (const Params& q : completed_seeds(f, big, t)) EXPECT_EQ(q.at("KD_CLUSTER"), 0) << describe(q);
}

// KD_BLO: B's lo parts come from a first launch (kd_wg_split_b) into the workspace after any split-K
// partials; the main kernel is its programmatic dependent. Strict fp32 with the producer warpgroup only.
TEST(WgTiled, SplitOfBIsAFirstLaunchIntoTheWorkspace) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=28672 n=16 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 epilogue=none beta0=1");
  const auto seeds = completed_seeds(f, key, t);
  const auto it = std::find_if(seeds.begin(), seeds.end(), [](const Params& p) { return p.at("KD_BLO") == 1; });
  ASSERT_NE(it, seeds.end()) << "n <= 16 seeds one configuration with B split once per call";
  Params p = *it;
  LaunchPlan plan = f.plan(key, t, p);
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.launches[0].entry, "kd_wg_split_b");
  EXPECT_FALSE(plan.launches[0].pdl);
  EXPECT_EQ(plan.launches[0].grid[0], 16u * 4096 / 4 / 256);
  EXPECT_EQ(plan.launches[1].entry, "kd_wg_tiled");
  EXPECT_TRUE(plan.launches[1].pdl);
  EXPECT_EQ(plan.workspace_bytes, 16u * 4096 * 4);
  EXPECT_EQ(std::get<LaunchPlan>(parse_plan_from_source(render(f, key, t, p))), plan);
  // With split-K the lo parts follow the partials, from a 16-byte boundary; k rounds up to 4.
  const GemmKey odd = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=777 n=13 k=4094 lda=4096 ldb=4096 ldc=777 batch=1 epilogue=none beta0=1");
  Params q = completed_seeds(f, odd, t).front();
  q["KD_BLO"] = 1;
  q["KD_SPLITK"] = 3;
  ASSERT_TRUE(f.valid(odd, t, q)) << describe(q);
  plan = f.plan(odd, t, q);
  ASSERT_EQ(plan.launches.size(), 3u);
  EXPECT_EQ(plan.launches[2].entry, "kd_wg_tiled_reduce");
  EXPECT_EQ(plan.workspace_bytes, (3u * 777 * 13 * 4 + 15) / 16 * 16 + 13u * 4096 * 4);
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_BLO", 2)));
  const GemmKey wide = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  Params w = completed_seeds(f, wide, t).front();
  w["KD_BLO"] = 1;
  w["KD_PROMOTE"] = 1;
  w["KD_STAGES"] = 4;
  EXPECT_TRUE(f.valid(wide, t, w)) << "4 stages of A, B and B lo fit";
  w["KD_STAGES"] = 5;
  EXPECT_FALSE(f.valid(wide, t, w)) << "5 stages of 50 KB do not";
  w["KD_STAGES"] = 4;
  w["KD_WS"] = 0;
  EXPECT_FALSE(f.valid(wide, t, w)) << "the producer warpgroup copies the lo tiles";
  const GemmKey tf32 = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32");
  Params x = f.complete(tf32, t, completed_seeds(f, tf32, t).front());
  x["KD_BLO"] = 1;
  EXPECT_FALSE(f.valid(tf32, t, x)) << "plain TF32 has no lo parts";
}

// KD_TAIL: the tiles past the last whole wave split in k (28672x128: 224 tiles of 128x128 on 132 SMs,
// 92 left over, 4 ranges each), summed by a programmatic dependent with one block row per split tile.
// A batched call whose tiles already cover 90% of the SMs is not split in k: attention's
// 128x512x512 x32 (128 tiles on 132 SMs) ran 36.7 us split in two and 24.2 us unsplit (H200). One
// batch of the same tile count still splits, as its seeds were measured.
TEST(WgTiled, BatchedTilesCoveringMostSMsAreNotSplit) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey bmm = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=512 k=512 lda=128 ldb=512 ldc=128 batch=32 "
      "stride_a=65536 stride_b=262144 stride_c=65536 epilogue=none beta0=1");
  int wide = 0;
  for (const Params& p : completed_seeds(f, bmm, t)) {
    if (p.at("KD_BN") != 128 || p.at("KD_WG") != 2 || p.at("KD_CLUSTER") != 0) continue;
    EXPECT_EQ(p.at("KD_SPLITK"), 1) << describe(p);
    ++wide;
  }
  EXPECT_GT(wide, 0);
  const GemmKey one = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=512 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  const std::vector<Params> seeds = completed_seeds(f, one, t);
  EXPECT_TRUE(std::any_of(seeds.begin(), seeds.end(), [](const Params& p) { return p.at("KD_SPLITK") == 2; }))
      << "128 tiles of one batch still split in two";
}

// Batched entries of at most 64 rows (attention's values of 64-wide heads) also get the persistent seed
// with one consumer warpgroup, whose m64 tile is the whole entry: 23.2 us against 30.2 with two (H200,
// session 43).
TEST(WgTiled, BatchedEntriesOfAtMost64RowsGetAOneConsumerLoop) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey values = key_of(kBertValues);
  const std::vector<Params> skb = completed_seeds_with(f, values, t, "KD_SKB");
  ASSERT_EQ(skb.size(), 2u) << "two consumers, then one";
  EXPECT_EQ(skb[0].at("KD_WG"), 2);
  EXPECT_EQ(skb[0].at("KD_TMAL"), 1);
  Params one = with(skb[0], "KD_WG", 1);
  one.erase("KD_TMAL");
  EXPECT_EQ(skb[1], one) << "one consumer copies its operands with cp.async";
  EXPECT_TRUE(f.valid(values, t, skb[1]));
  const LaunchPlan lp = f.plan(values, t, skb[1]);
  EXPECT_EQ(lp.workspace_bytes, 0u);
  ASSERT_EQ(lp.launches.size(), 1u);
  EXPECT_EQ(lp.launches[0].grid, (std::array<std::uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(lp.launches[0].block[0], 256u) << "the producer and one consumer";
  // Taller entries keep two consumers only.
  const GemmKey taller = key_of(kBmm128);
  for (const Params& p : completed_seeds_with(f, taller, t, "KD_SKB")) EXPECT_EQ(p.at("KD_WG"), 2);
}

// A batched call of many short tiles gets a persistent seed: stream-K over whole tiles (no partials,
// no workspace), a divisor of each batch's tiles per batch, one wave. 512x512x64 x32: 16 tiles a
// batch, 4 CTAs each (128 CTAs of 4 tiles); 20.8 us against 24.3 one tile per CTA (H200, session 33).
// 128^3 x256 (one tile a batch) runs the same over every batch entry in one launch (KD_SKB): 128 CTAs
// of two tiles each.
TEST(WgTiled, BatchedShortTilesGetAPersistentStreamKSeed) {
  const Family& f = wg_tiled_family();
  const Target t;
  const auto stream_k_seeds = [&](const GemmKey& key) { return completed_seeds_with(f, key, t, "KD_SK"); };
  const GemmKey scores = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=512 batch=32 "
      "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1");
  const std::vector<Params> sk = stream_k_seeds(scores);
  ASSERT_EQ(sk.size(), 3u) << "the plain seed, its copy with the consumers taking turns, and that with TMA stores";
  EXPECT_EQ(sk[0].at("KD_SK"), 4);
  EXPECT_FALSE(sk[0].contains("KD_PP"));
  EXPECT_EQ(sk[1], with(sk[0], "KD_PP", 1));
  EXPECT_TRUE(f.valid(scores, t, sk[1]));
  EXPECT_TRUE(f.valid(scores, t, sk[0]));
  // Whole tiles per CTA leave no partials; the operands arrive by the TMA (KD_TMAL), A's and B's maps
  // built per CTA into the workspace after the TMA stores' room.
  EXPECT_EQ(sk[0].at("KD_TMAL"), 1);
  const LaunchPlan lp = f.plan(scores, t, sk[0]);
  EXPECT_EQ(lp.workspace_bytes, 128u * (2 * 128 + 256)) << "128 CTAs: two consumers' C maps' room, then A's and B's";
  EXPECT_EQ(f.plan(scores, t, with(sk[0], "KD_TMAL", 0)).workspace_bytes, 0u) << "the cp.async copies need none";
  ASSERT_EQ(lp.launches.size(), 1u);
  EXPECT_EQ(lp.launches[0].grid[0] * lp.launches[0].grid[2], 128u);
  EXPECT_FALSE(sk[0].contains("KD_SKB")) << "four CTAs in each batch entry";
  EXPECT_EQ(f.plan(scores, t, sk[1]).launches[0].smem_bytes, lp.launches[0].smem_bytes + 128 * 128)
      << "turns get a third B-lo buffer: consumer 1 runs a segment behind consumer 0";
  // With TMA stores (KD_TMAST): a 16 KB staging buffer per consumer after the mbarriers, and C's tensor
  // map per consumer and CTA in the workspace.
  EXPECT_EQ(sk[2], with(sk[1], "KD_TMAST", 1));
  EXPECT_TRUE(f.valid(scores, t, sk[2]));
  const LaunchPlan tma = f.plan(scores, t, sk[2]);
  EXPECT_GE(tma.launches[0].smem_bytes, f.plan(scores, t, sk[1]).launches[0].smem_bytes + 2 * 16384);
  EXPECT_LE(tma.launches[0].smem_bytes, f.plan(scores, t, sk[1]).launches[0].smem_bytes + 2 * 16384 + 1024);
  EXPECT_EQ(tma.workspace_bytes, 128u * (2 * 128 + 256)) << "128 CTAs of two consumers, a 128-byte map each, and A's "
                                                            "and B's";
  EXPECT_EQ(f.plan(scores, t, with(sk[2], "KD_TMAL", 0)).workspace_bytes, 128u * 2 * 128);
  // C's strides must be whole 16 bytes for the map; C itself the kernel checks.
  const GemmKey odd_ldc = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=513 batch=32 "
      "stride_a=32768 stride_b=32768 stride_c=262656 epilogue=none beta0=1");
  EXPECT_TRUE(f.valid(odd_ldc, t, sk[1]));
  EXPECT_FALSE(f.valid(odd_ldc, t, sk[2]));
  EXPECT_EQ(stream_k_seeds(odd_ldc).size(), 2u) << "no TMA-store seed where C's strides do not allow one";
  const GemmKey tiny = key_of(kBmm128);
  const std::vector<Params> skb = stream_k_seeds(tiny);
  ASSERT_EQ(skb.size(), 1u) << "k = 128 is four k tiles a segment: too long for turns";
  EXPECT_FALSE(f.valid(tiny, t, with(skb[0], "KD_PP", 1)));
  EXPECT_EQ(skb[0].at("KD_SK"), 128);
  EXPECT_EQ(skb[0].at("KD_SKB"), 1);
  EXPECT_EQ(skb[0].at("KD_TMAL"), 1);
  const LaunchPlan across = f.plan(tiny, t, skb[0]);
  EXPECT_EQ(across.workspace_bytes, 128u * (2 * 128 + 256));
  ASSERT_EQ(across.launches.size(), 1u);
  EXPECT_EQ(across.launches[0].grid, (std::array<std::uint32_t, 3>{128, 1, 1}));
  // Whole tiles only: a CTA count that does not divide the tiles, or one batch entry, is not valid.
  EXPECT_FALSE(f.valid(tiny, t, with(skb[0], "KD_SK", 129)));
  const GemmKey single = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=128 lda=128 ldb=128 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  EXPECT_FALSE(f.valid(single, t, with(skb[0], "KD_SK", 128)));
  // The GPU gate test's ragged batch (one tile each, bias) gets one too.
  const GemmKey ragged = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=120 n=100 k=72 lda=72 ldb=72 ldc=120 batch=256 "
      "stride_a=8640 stride_b=7200 stride_c=12000 epilogue=bias beta0=0");
  const std::vector<Params> ragged_skb = completed_seeds_with(f, ragged, t, "KD_SKB");
  ASSERT_EQ(ragged_skb.size(), 1u);
  // Turns only where a tile is at most two k tiles (three hung in the GPU gate with two B-lo
  // buffers and has not run with three): k = 72 is three.
  EXPECT_FALSE(f.valid(ragged, t, with(ragged_skb[0], "KD_PP", 1)));
  const GemmKey ragged64 = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=120 n=100 k=40 lda=40 ldb=40 ldc=120 batch=256 "
      "stride_a=4800 stride_b=4000 stride_c=12000 epilogue=bias beta0=0");
  EXPECT_EQ(completed_seeds_with(f, ragged64, t, "KD_SKB").size(), 3u);
  EXPECT_EQ(completed_seeds_with(f, ragged64, t, "KD_PP").size(), 2u) << "turns, and turns with TMA stores";
  EXPECT_EQ(completed_seeds_with(f, ragged64, t, "KD_TMAST").size(), 1u)
      << "the GPU gate test's ragged batch with bias and beta stores through the TMA too";
  // Switching stream-K off drops KD_SKB with it.
  bool off = false;
  for (const IdeaMove& move : wg_tiled_ideas()) {
    if (move.id != "wg.sk_off") continue;
    const std::optional<Params> q = move.apply(tiny, t, skb[0]);
    ASSERT_TRUE(q.has_value());
    EXPECT_FALSE(q->contains("KD_SKB"));
    const std::optional<Params> r = move.apply(scores, t, sk[1]);
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->contains("KD_PP")) << "turns need stream-K";
    const std::optional<Params> u = move.apply(scores, t, sk[2]);
    ASSERT_TRUE(u.has_value());
    EXPECT_FALSE(u->contains("KD_TMAST")) << "so do TMA stores";
    off = true;
  }
  EXPECT_TRUE(off);
}

// Stream-K's operands by the TMA (KD_TMAL): the batched seeds of f32 with tb = N get them, A with either
// ta; entries that overlap (a broadcast operand, batch stride 0), partial tiles and one consumer keep the
// cp.async copies; the idea moves switch them either way, and switching stream-K off drops them.
TEST(WgTiled, StreamKOperandsByTheTmaWhereTheyFit) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey tiny = key_of(kBmm128);
  const std::vector<Params> skb = completed_seeds_with(f, tiny, t, "KD_SK");
  ASSERT_EQ(skb.size(), 1u);
  ASSERT_EQ(skb[0].at("KD_TMAL"), 1);
  const GemmKey values = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=256 "
      "stride_a=16384 stride_b=16384 stride_c=16384 epilogue=none beta0=1");
  const std::vector<Params> by_m = completed_seeds_with(f, values, t, "KD_SK");
  ASSERT_FALSE(by_m.empty());
  for (const Params& p : by_m) EXPECT_EQ(p.at("KD_TMAL"), 1) << "ta = N: A's box is its k rows of m, padded";
  const GemmKey overlapping = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=256 "
      "stride_a=16380 stride_b=16384 stride_c=16384 epilogue=none beta0=1");
  EXPECT_FALSE(f.valid(overlapping, t, by_m[0])) << "A's entries overlap: k lda = 16384 floats";
  const GemmKey heads64 = key_of(kBertValues);
  for (const Params& p : completed_seeds_with(f, heads64, t, "KD_SK"))
    EXPECT_EQ(p.contains("KD_TMAL"), p.at("KD_WG") == 2) << "one consumer keeps the cp.async copies";
  const GemmKey broadcast = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=128 n=128 k=128 lda=128 ldb=128 ldc=128 batch=256 "
      "stride_a=0 stride_b=16384 stride_c=16384 epilogue=none beta0=1");
  EXPECT_FALSE(f.valid(broadcast, t, skb[0]));
  EXPECT_TRUE(f.valid(broadcast, t, with(skb[0], "KD_TMAL", 0)));
  const GemmKey shared_tiles = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=6144 n=16 k=4096 lda=4096 ldb=4096 ldc=6144 batch=1 "
      "epilogue=none beta0=1");
  for (const Params& p : completed_seeds_with(f, shared_tiles, t, "KD_SK")) EXPECT_FALSE(p.contains("KD_TMAL"));
  const IdeaMove *on = nullptr, *off = nullptr, *sk_off = nullptr;
  for (const IdeaMove& m : wg_tiled_ideas()) {
    if (m.id == std::string("wg.tmal_on")) on = &m;
    if (m.id == std::string("wg.tmal_off")) off = &m;
    if (m.id == std::string("wg.sk_off")) sk_off = &m;
  }
  ASSERT_TRUE(on && off && sk_off);
  const std::optional<Params> copies = off->apply(tiny, t, skb[0]);
  ASSERT_TRUE(copies.has_value());
  EXPECT_FALSE(copies->contains("KD_TMAL"));
  EXPECT_TRUE(f.valid(tiny, t, *copies));
  EXPECT_FALSE(off->apply(tiny, t, *copies).has_value());
  const std::optional<Params> back = on->apply(tiny, t, *copies);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, skb[0]);
  EXPECT_FALSE(on->apply(broadcast, t, *copies).has_value());
  const std::optional<Params> whole_k = sk_off->apply(tiny, t, skb[0]);
  ASSERT_TRUE(whole_k.has_value());
  EXPECT_FALSE(whole_k->contains("KD_TMAL"));
}

// Attention's batches of short k get no f16-split plan, seeded or by the idea move: its first launch
// would split B a column per block (H200: 69-93 us against 18-20 for the 3xTF32 plans). Longer k, and
// tb = T (where only the f16 splits read B), keep them.
TEST(WgTiled, BatchedShortKGetsNoF16Splits) {
  const Family& f = wg_tiled_family();
  const Target t;
  const auto f16s = [&](const char* line) { return completed_seeds_with(f, key_of(line), t, "KD_F16S").size(); };
  const char* scores =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=512 batch=32 "
      "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1";
  EXPECT_EQ(f16s(scores), 0u);
  EXPECT_EQ(f16s(kBmm128), 0u);
  EXPECT_GT(f16s("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=128 n=512 k=512 lda=128 ldb=512 ldc=128 batch=32 "
                 "stride_a=65536 stride_b=262144 stride_c=65536 epilogue=none beta0=1"),
            0u);
  EXPECT_GT(f16s("gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=T m=512 n=512 k=64 lda=64 ldb=512 ldc=512 batch=32 "
                 "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1"),
            0u);
  const GemmKey key = key_of(scores);
  for (const Params& p : completed_seeds(f, key, t)) {
    for (const IdeaMove& move : wg_tiled_ideas()) {
      if (move.id == "wg.f16s_on") {
        EXPECT_FALSE(move.apply(key, t, p).has_value());
      }
    }
  }
}

TEST(WgTiled, PartialLastWaveIsSplitInK) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=28672 n=128 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 epilogue=none beta0=1");
  const auto seeds = completed_seeds(f, key, t);
  const auto it = std::find_if(seeds.begin(), seeds.end(), [](const Params& p) { return p.at("KD_TAIL") > 1; });
  ASSERT_NE(it, seeds.end()) << "1.7 waves of tiles: one seed splits the last wave's tiles";
  const Params p = *it;
  EXPECT_EQ(p.at("KD_TAIL"), 4);
  EXPECT_EQ(p.at("KD_SPLITK"), 1);
  const LaunchPlan plan = f.plan(key, t, p);
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.launches[0].grid, (std::array<std::uint32_t, 3>{224 + 92 * 3, 1, 1}));
  EXPECT_EQ(plan.launches[1].entry, "kd_wg_tail_reduce");
  EXPECT_EQ(plan.launches[1].grid, (std::array<std::uint32_t, 3>{16, 92, 1}));
  EXPECT_TRUE(plan.launches[1].pdl);
  EXPECT_EQ(plan.workspace_bytes, 4u * 28672 * 128 * 4);
  EXPECT_EQ(std::get<LaunchPlan>(parse_plan_from_source(render(f, key, t, p))), plan);
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_TAIL", 5))) << "beyond the measured best";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SPLITK", 2))) << "no k split of its own";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_BLO", 1))) << "spills with KD_BLO";
  // Whole waves (4096x128x4096: 32 tiles) have no tail to split, and no seed tries.
  const GemmKey small = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  for (const Params& q : completed_seeds(f, small, t)) EXPECT_EQ(q.at("KD_TAIL"), 1) << describe(q);
  Params q = completed_seeds(f, small, t).front();
  q["KD_SPLITK"] = 1;
  q["KD_TAIL"] = 4;
  EXPECT_FALSE(f.valid(small, t, q));
}

// KD_SK: 6144x128x4096 has 48 tiles of 128x128; split-K leaves its last wave 45% full (192 CTAs on 132
// SMs), so one seed runs stream-K: 132 CTAs of 46.5 k tiles, a tile spanning at most 4 of them, the
// partials summed by a programmatic dependent with one block row per tile.
TEST(WgTiled, StreamKSeedsWhereSplitKLeavesAPartialWave) {
  const Family& f = wg_tiled_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=6144 n=128 k=4096 lda=4096 ldb=4096 ldc=6144 batch=1 epilogue=none beta0=1");
  const auto seeds = completed_seeds(f, key, t);
  const auto it = std::find_if(seeds.begin(), seeds.end(), [](const Params& p) { return p.at("KD_SK") > 0; });
  ASSERT_NE(it, seeds.end());
  const Params p = *it;
  EXPECT_EQ(p.at("KD_SK"), t.sms);
  EXPECT_EQ(p.at("KD_SPLITK"), 1);
  EXPECT_EQ(p.at("KD_PROMOTE"), 1);
  EXPECT_EQ(stream_k_slots(key, p), 4);
  const LaunchPlan plan = f.plan(key, t, p);
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.launches[0].grid, (std::array<std::uint32_t, 3>{static_cast<std::uint32_t>(t.sms), 1, 1}));
  EXPECT_EQ(plan.launches[1].entry, "kd_wg_sk_reduce");
  EXPECT_EQ(plan.launches[1].grid, (std::array<std::uint32_t, 3>{16, 48, 1}));
  EXPECT_TRUE(plan.launches[1].pdl);
  EXPECT_EQ(plan.workspace_bytes, 4u * 6144 * 128 * 4);
  EXPECT_EQ(std::get<LaunchPlan>(parse_plan_from_source(render(f, key, t, p))), plan);
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SK", 1)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SPLITK", 2))) << "one way to divide k at a time";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_PROMOTE", 2)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_WS", 0))) << "the producer warpgroup follows the segments";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_SK", 48 * 128 + 1))) << "more CTAs than k-tile units";
  EXPECT_TRUE(f.valid(key, t, with(p, "KD_SK", 96))) << "any CTA count up to the units";
  // Whole tiles per CTA need no workspace and no second launch (a 6144x128 tile is 128 k tiles).
  const LaunchPlan whole = f.plan(key, t, with(p, "KD_SK", 48));
  ASSERT_EQ(whole.launches.size(), 1u);
  EXPECT_EQ(whole.workspace_bytes, 0u);
  // Split-K that fills its waves keeps it: 4096x128x4096 (32 tiles, 8 splits, 1.94 waves) has no
  // stream-K seed; the idea moves switch either way.
  const GemmKey full = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  for (const Params& q : completed_seeds(f, full, t)) EXPECT_EQ(q.at("KD_SK"), 0) << describe(q);
  const Params base = completed_seeds(f, full, t).front();
  const IdeaMove* on = nullptr;
  const IdeaMove* off = nullptr;
  for (const IdeaMove& m : wg_tiled_ideas()) {
    if (m.id == std::string("wg.sk_on")) on = &m;
    if (m.id == std::string("wg.sk_off")) off = &m;
  }
  ASSERT_TRUE(on && off);
  const auto sk = apply_idea(*on, f, full, t, base);
  ASSERT_TRUE(sk.has_value());
  EXPECT_EQ(sk->at("KD_SK"), t.sms);
  EXPECT_EQ(sk->at("KD_SPLITK"), 1);
  const auto back = apply_idea(*off, f, full, t, *sk);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->at("KD_SK"), 0);
  EXPECT_GT(back->at("KD_SPLITK"), 1);
  // Batched calls keep split-K (the units are counted per batch).
  const GemmKey batched = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=6144 n=128 k=4096 lda=4096 ldb=4096 ldc=6144 batch=2 stride_a=25165824 stride_b=524288 stride_c=786432 epilogue=none beta0=1");
  for (const Params& q : completed_seeds(f, batched, t)) EXPECT_EQ(q.at("KD_SK"), 0) << describe(q);
}

// KD_F16S: strict-fp32 n = 128 calls get f16-split seeds (the split that fills the SMs, half of it,
// and the tail split where a wave is partial); TF32 calls with tb = N do not (their TF32 plans are
// faster), but the idea move gives them one product (KD_3XTF32 = 0); the schemes the kernel lacks with
// it are not offered, and the idea moves switch it on and off.
TEST(WgTiled, F16SplitSeedsForStrictF32) {
  const Family& f = wg_tiled_family();
  const Target t;
  const auto f16s_of = [&](const GemmKey& key) { return completed_seeds_with(f, key, t, "KD_F16S"); };
  const std::string n128 = "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
  const GemmKey key = key_of(n128);
  const auto seeds = f16s_of(key);
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(seeds[0].at("KD_SPLITK"), 8);
  EXPECT_EQ(seeds[1].at("KD_SPLITK"), 4);
  for (const Params& p : seeds) {
    EXPECT_EQ(p.at("KD_PROMOTE"), 1);
    EXPECT_EQ(p.at("KD_BLO"), 0);
    EXPECT_EQ(p.at("KD_3XTF32"), 1);
  }
  const Params p = seeds[1];
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_PROMOTE", 2)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_BLO", 1)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_BN", 256)));
  EXPECT_TRUE(f.valid(key, t, with(p, "KD_BN", 64))) << "the narrow plans' m64n64 consumers";
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_WS", 0)));
  EXPECT_FALSE(f.valid(key, t, with(with(p, "KD_SPLITK", 1), "KD_SK", 132)));
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_F16S", 2)));
  // 4 stages: A rows of 40 floats (20 KB) and B's 128-byte rows of halves (16 KB), no B-lo buffers.
  EXPECT_EQ(f.plan(key, t, p).launches[1].smem_bytes, 1024u + 4 * (20480 + 16384) + 256);
  // 28672x128 (224 tiles, 92 past the first wave): an unsplit seed and its tail split.
  const GemmKey big = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=28672 n=128 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 epilogue=none beta0=1");
  const auto big_seeds = f16s_of(big);
  ASSERT_EQ(big_seeds.size(), 2u);
  EXPECT_EQ(big_seeds[0].at("KD_TAIL"), 1);
  EXPECT_EQ(big_seeds[1].at("KD_TAIL"), 4);
  // The TF32 class: no f16-split seeds with tb = N (issue 30, measured slower than its TF32 plans).
  const GemmKey tf32_key = key_of(n128 + " precision=tf32");
  EXPECT_TRUE(f16s_of(tf32_key).empty());
  EXPECT_TRUE(f.valid(tf32_key, t, with(p, "KD_3XTF32", 0))) << "hi * hi alone serves a TF32 call";
  EXPECT_EQ(f.plan(tf32_key, t, with(p, "KD_3XTF32", 0)).launches.front().entry, "kd_wg_split_b16");
  EXPECT_FALSE(f.valid(key, t, with(p, "KD_3XTF32", 0))) << "one product is not strict fp32";
  const IdeaMove* on = nullptr;
  const IdeaMove* off = nullptr;
  for (const IdeaMove& m : wg_tiled_ideas()) {
    if (m.id == std::string("wg.f16s_on")) on = &m;
    if (m.id == std::string("wg.f16s_off")) off = &m;
  }
  ASSERT_TRUE(on && off);
  const Params tf32 = completed_seeds(f, key, t).front();  // 5 stages, two tiles per promotion
  ASSERT_EQ(tf32.at("KD_F16S"), 0);
  const auto moved = apply_idea(*on, f, key, t, tf32);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->at("KD_F16S"), 1);
  EXPECT_EQ(moved->at("KD_PROMOTE"), 1);
  const auto back = apply_idea(*off, f, key, t, *moved);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->at("KD_F16S"), 0);
  // On a TF32 call the move keeps one product.
  const Params plain = completed_seeds(f, tf32_key, t).front();
  ASSERT_EQ(plain.at("KD_F16S"), 0);
  ASSERT_EQ(plain.at("KD_3XTF32"), 0);
  const auto one = apply_idea(*on, f, tf32_key, t, plain);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->at("KD_3XTF32"), 0);
  EXPECT_TRUE(f.valid(tf32_key, t, *one)) << describe(*one);
  EXPECT_NE(on->text(tf32_key, t, plain).find("one f16"), std::string::npos);
  // Narrow outputs (17-64 columns): the narrow plan once more on f16 splits, strict f32 only.
  for (const auto& [n, bn] : {std::pair{32, 32}, std::pair{40, 32}, std::pair{64, 64}}) {
    const std::string line = fmt::format(
        "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n={} k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
        "epilogue=none beta0=1",
        n);
    const auto narrow = f16s_of(key_of(line));
    ASSERT_EQ(narrow.size(), 1u) << line;
    EXPECT_EQ(narrow[0].at("KD_BN"), bn) << line;
    EXPECT_EQ(narrow[0].at("KD_STAGES"), 8) << line;
    EXPECT_GT(narrow[0].at("KD_SPLITK"), 1) << line;
    EXPECT_TRUE(f.valid(key_of(line), t, narrow[0])) << line << ": " << describe(narrow[0]);
    EXPECT_TRUE(f16s_of(key_of(line + " precision=tf32")).empty()) << line;
  }
  EXPECT_TRUE(f16s_of(key_of("gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
                             "ldc=4096 batch=1 epilogue=none beta0=1"))
                  .empty())
      << "m64n16 tiles keep 3xTF32";
}

// Issue 30: the f16 splits serve every layout. ta = N reads A's fragments from k rows of BM + 4 floats;
// tb = T is read only by the split of B (32 columns per block of 512 threads), so its calls get the
// f16-split seeds alone, need no 16-byte alignment of ldb or the batch stride, and are rejected where
// those seeds cannot serve them (n <= 64; TF32 calls take the one-product seeds). Strided batches take
// the same seeds.
TEST(WgTiled, F16SplitSeedsForEveryLayout) {
  const Family& f = wg_tiled_family();
  const Target t;
  const auto line = [](const char* ta, const char* tb, const char* rest) {
    return fmt::format("gemm a=f32 b=f32 c=f32 compute=f32 ta={} tb={} {}", ta, tb, rest);
  };
  const char* cube = "m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
  for (const char* ta : {"N", "T"})
    for (const char* tb : {"N", "T"}) {
      const GemmKey key = key_of(line(ta, tb, cube));
      ASSERT_FALSE(f.rejects(key).has_value()) << key.shape_line();
      const auto seeds = completed_seeds(f, key, t);
      int f16s = 0;
      for (const Params& p : seeds) {
        ASSERT_TRUE(f.valid(key, t, p)) << key.shape_line() << " " << describe(p);
        if (p.at("KD_F16S") != 1) {
          EXPECT_EQ(key.tb, Transpose::N) << "tb = T only through the f16 splits: " << describe(p);
          continue;
        }
        ++f16s;
        EXPECT_EQ(p.at("KD_SPLITK"), 1) << "1024 tiles fill the SMs";
        const LaunchPlan lp = f.plan(key, t, p);
        EXPECT_EQ(lp, std::get<LaunchPlan>(parse_plan_from_source(render(f, key, t, p))));
        ASSERT_EQ(lp.launches.size(), 2u);
        EXPECT_EQ(lp.launches[0].entry, "kd_wg_split_b16");
        const bool tb_t = key.tb == Transpose::T;
        EXPECT_EQ(lp.launches[0].grid[0], tb_t ? 128u : 4096u) << "tb = T: 32 columns per block";
        EXPECT_EQ(lp.launches[0].block[0], tb_t ? 512u : 256u);
        // A's stage: ta = T [128][40] floats (20 KB); ta = N [32][132] (16.5 KB, 1024-aligned: 17 KB).
        const unsigned a_bytes = key.ta == Transpose::T ? 20480u : 17408u;
        EXPECT_EQ(lp.launches[1].smem_bytes, 1024u + 4 * (a_bytes + 16384) + 256);
        EXPECT_EQ(lp.workspace_bytes, 4096u * (4096 + 1) * 4) << "B's halves and column scales";
      }
      EXPECT_EQ(f16s, 1) << key.shape_line();
      if (key.tb == Transpose::T) {
        EXPECT_EQ(seeds.size(), 1u);
        EXPECT_FALSE(f.valid(key, t, with(seeds.front(), "KD_F16S", 0))) << "nothing else reads B with tb = T";
      }
    }
  // A Linear layer's weight gradient dW = X^T dY is ta = N tb = T; here strided-batched, ragged, with ldb
  // and the batch stride off 16 bytes (B is read a float at a time).
  const GemmKey dw = key_of(line("N", "T",
                                 "m=1000 n=300 k=500 lda=1000 ldb=301 ldc=1000 batch=3 stride_a=500000 stride_b=150501 "
                                 "stride_c=300000 epilogue=bias beta0=0"));
  ASSERT_FALSE(f.rejects(dw).has_value());
  const auto dw_seeds = completed_seeds(f, dw, t);
  ASSERT_FALSE(dw_seeds.empty());
  for (const Params& p : dw_seeds) {
    EXPECT_EQ(p.at("KD_F16S"), 1);
    ASSERT_TRUE(f.valid(dw, t, p)) << describe(p);
    EXPECT_EQ(f.plan(dw, t, p).launches[0].grid[0], 3u * 10) << "batch * ceil(300 / 32) blocks";
  }
  // A TF32 call with tb = T: the one-product seed alone.
  const GemmKey tf32_tbt = key_of(line("N", "T", "m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32"));
  ASSERT_FALSE(f.rejects(tf32_tbt).has_value());
  const auto tf32_tbt_seeds = completed_seeds(f, tf32_tbt, t);
  ASSERT_EQ(tf32_tbt_seeds.size(), 1u);
  EXPECT_EQ(tf32_tbt_seeds.front().at("KD_3XTF32"), 0);
  EXPECT_TRUE(f.valid(tf32_tbt, t, tf32_tbt_seeds.front()));
  // Where the f16 splits do not serve tb = T, the family says so.
  for (const char* rest : {"m=4096 n=64 k=4096 lda=4096 ldb=64 ldc=4096 batch=1 epilogue=none beta0=1",
                           "m=4096 n=64 k=4096 lda=4096 ldb=64 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32"}) {
    const GemmKey key = key_of(line("N", "T", rest));
    ASSERT_TRUE(f.rejects(key).has_value()) << key.shape_line();
    EXPECT_NE(f.rejects(key)->find("f16 splits"), std::string::npos) << *f.rejects(key);
  }
  EXPECT_TRUE(f.rejects(key_of(line("N", "N", "m=1000 n=300 k=500 lda=1000 ldb=501 ldc=1000 batch=1 epilogue=none beta0=1")))
                  .has_value())
      << "tb = N still copies B 16 bytes at a time";
  // The idea move switches a TF32 plan of a ta = N call to the f16 splits.
  const GemmKey ta_n = key_of(line("N", "N", cube));
  const IdeaMove* on = nullptr;
  for (const IdeaMove& m : wg_tiled_ideas())
    if (m.id == std::string("wg.f16s_on")) on = &m;
  ASSERT_NE(on, nullptr);
  const Params tf32 = completed_seeds(f, ta_n, t).front();
  ASSERT_EQ(tf32.at("KD_F16S"), 0);
  const auto moved = apply_idea(*on, f, ta_n, t, tf32);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->at("KD_F16S"), 1);
}

TEST(WgTiled, IdeasYieldValidDistinctConfigurations) {
  const auto [applied, ids] = test::sweep_ideas(wg_tiled_family(), wg_tiled_ideas());
  EXPECT_GT(applied, 40);
  EXPECT_GE(ids.size(), 6u) << "most moves apply somewhere on the Llama shapes (the seeds already use two warpgroups)";
}

// Every distinct rendered configuration (seeds and one idea step from them, every layout, strict and
// TF32, batched bias calls with ragged edges, 1000^3 with its cluster seed) compiles with NVRTC for
// sm_90 (as sm_90a) without spills and without wgmma serialization. The warp-specialized kernel's producer and consumers run
// under their own register limits (setmaxnreg); ptxas reports a spill in either.
TEST(WgTiled, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const std::vector<std::string> extra = {
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=500 lda=1000 ldb=504 ldc=1000 batch=2 stride_a=504000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1000 n=100 k=500 lda=504 ldb=504 ldc=1000 batch=2 stride_a=504000 stride_b=50400 stride_c=100000 epilogue=bias beta0=0",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=1000 k=1000 lda=1000 ldb=1000 ldc=1000 batch=1 epilogue=none beta0=1",
      // m64n32 tiles (17-47 columns), both A layouts; ragged and batched with bias.
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=32 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=40 k=500 lda=1000 ldb=504 ldc=1000 batch=2 stride_a=504000 stride_b=20160 stride_c=40000 epilogue=bias beta0=0",
      // m64n64 tiles (48-64 columns), with the narrow plan on f16 splits.
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=64 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1",
      // The f16 splits' other layouts (issue 30): tb = T (its own split of B) with ta = N and T,
      // strided-batched and ragged; seeds only (m != 4096: the main kernel's idea steps are
      // those of tb = N).
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=2048 n=4096 k=4096 lda=2048 ldb=4096 ldc=2048 batch=1 epilogue=none beta0=1",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=T m=2048 n=4096 k=4096 lda=4096 ldb=4096 ldc=2048 batch=1 epilogue=none beta0=1",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=300 k=500 lda=1000 ldb=301 ldc=1000 batch=3 stride_a=500000 stride_b=150501 stride_c=300000 epilogue=bias beta0=0",
      // Short-k batches: turns, and turns with TMA stores (KD_TMAST) finishing bias and beta C.
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=120 n=100 k=40 lda=40 ldb=40 ldc=120 batch=256 stride_a=4800 stride_b=4000 stride_c=12000 epilogue=bias beta0=0",
      // The same with ta = N (the operands by the TMA: A's box unswizzled).
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=120 n=100 k=40 lda=120 ldb=40 ldc=120 batch=256 stride_a=4800 stride_b=4000 stride_c=12000 epilogue=bias beta0=0"};
  // One idea step from the first seed of the 4096 x 4096 keys, both layouts.
  const std::vector<std::string> sources = test::seeds_and_first_steps(
      wg_tiled_family(), Target{}, wg_tiled_ideas(), extra,
      [](const GemmKey& key) { return key.m == 4096 && key.k == 4096; });
  ASSERT_GE(sources.size(), 10u);
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/true);
}

// tools/dev/lab_wg_f32.json, lab_wg_cluster.json, lab_wg_blo.json, lab_wg_tail.json, lab_wg_sk.json,
// lab_wg_f16s.json, lab_wg_f16s_base.json (wg_tiled's f16 splits, the baseline wg_tma_f16s was
// timed against), lab_wg_f16s_narrow.json (session 35's f16-split plans, with diagnostics that
// leave launches out), lab_wg_pp.json (session 42's stream-K consumers taking turns), lab_wg_tmal.json
// (session 47's operands by the TMA, each beside its cp.async twin) and lab_bmm_dram.json (session 48's
// DRAM bytes of the two short-k bmm seeds, kernel_lab.py --dram) agree with the
// family's rules: every variant is valid for its case's key and
// carries exactly the family's launch plan (a diagnostic, launches of it).
TEST(WgTiled, LabConfigMatchesTheFamilyRules) {
  const std::pair<const char*, int> files[] = {{"lab_wg_f32.json", 20}, {"lab_wg_cluster.json", 90},
                                               {"lab_wg_blo.json", 20}, {"lab_wg_tail.json", 16},
                                               {"lab_wg_sk.json", 30},  {"lab_wg_f16s.json", 30},
                                               {"lab_wg_f16s_base.json", 3}, {"lab_wg_f16s_narrow.json", 10},
                                               {"lab_wg_pp.json", 2},   {"lab_wg_tmal.json", 14},
                                               {"lab_bmm_dram.json", 2}};
  for (const auto& [file, at_least] : files) {
    int variants = 0;
    ASSERT_NO_FATAL_FAILURE(test::check_lab_config(file, wg_tiled_family(), variants));
    EXPECT_GE(variants, at_least) << file;
  }
}

// The layout header's two inverse pairs, which the host rules and the kernel each use one side of: the
// tail grid's extent gives the kernel back the number of whole tiles, and the CTA that holds a
// stream-K unit is the one whose range [begin(c), begin(c + 1)) contains it.
TEST(WgTiledLayout, TailExtentAndStreamKRangesInvertEachOther) {
  for (long long tiles : {1LL, 7LL, 92LL, 224LL})
    for (long long tail = 2; tail <= 4; ++tail)
      for (long long split = 0; split <= tiles; ++split)
        EXPECT_EQ(kd_wg_tail_whole(tiles, kd_wg_tail_ctas(tiles, split, tail), tail), tiles - split);
  for (long long units : {2LL, 97LL, 6144LL})
    for (long long ctas : {2LL, 3LL, 132LL, 396LL}) {
      if (ctas > units) continue;
      for (long long c = 0; c < ctas; ++c) {
        ASSERT_LT(kd_wg_sk_begin(c, units, ctas), kd_wg_sk_begin(c + 1, units, ctas)) << "every range non-empty";
        for (long long u = kd_wg_sk_begin(c, units, ctas); u < kd_wg_sk_begin(c + 1, units, ctas); ++u)
          ASSERT_EQ(kd_wg_sk_cta(u, units, ctas), c) << units << " units over " << ctas << " CTAs, unit " << u;
      }
    }
}

}  // namespace
}  // namespace kd::builtin
