#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "builtin/family_wg_tma.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "family_checks.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {
namespace {

using test::completed_seeds;
using test::key_of;
using test::llama_keys;

TEST(WgTma, RowCarriesItsEmbeddedSourceAndIsATrial) {
  const Family& f = wg_tma_family();
  EXPECT_EQ(f.name, "wg_tma");
  EXPECT_NE(f.source.find("kd_wg_tma("), std::string_view::npos);
  EXPECT_NE(f.source.find("tensormap.replace"), std::string_view::npos);
  EXPECT_TRUE(f.trial) << "not seeded by default until it has passed the gate on a GPU";
}

TEST(WgTma, ServesThe16BitShapesWithAtLeast48Columns) {
  const Family& f = wg_tma_family();
  int served = 0;
  for (const GemmKey& key : llama_keys()) {
    const bool want = key.a == DType::bf16 && key.n >= 48;
    EXPECT_EQ(!not_searched_for(f, key).has_value(), want) << key.shape_line();
    // Fewer columns are declined (padding), not rejected: a range search may use them (issue 29).
    if (key.a == DType::bf16 && key.n < 48) {
      EXPECT_FALSE(f.rejects(key)) << key.shape_line();
    }
    served += want;
  }
  EXPECT_EQ(served, 17);  // n = 64 (5 shapes), 256, 1024 and 4096 (4 each)
  auto why = [&](const std::string& line) { return not_searched_for(f, key_of(line)).value_or(""); };
  // Each key not searched for, with the words its reason must contain.
  const std::pair<const char*, const char*> refused[] = {
      {"gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
       "epilogue=none beta0=1",
       "bf16 or f16"},
      {"gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 "
       "batch=1 epilogue=none beta0=1",
       "padding"},
      {"gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=N tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 "
       "batch=1 epilogue=none beta0=1",
       "ta=T tb=N"},
      {"gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4100 lda=4100 ldb=4100 ldc=4096 "
       "batch=1 epilogue=none beta0=1",
       "multiples of 8"}};
  for (const auto& [line, words] : refused) EXPECT_NE(why(line).find(words), std::string::npos) << line;
  // f16 and an f32 output are served; ragged m, n and k are the TMA's zero fill.
  EXPECT_EQ(why("gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=N m=1000 n=300 k=504 lda=504 ldb=504 ldc=1000 batch=1 "
                "epilogue=none beta0=1"),
            "");
}

TEST(WgTma, SeedsAreValidOnHopperOnlyAndThePlanInTheSourceMatches) {
  const Family& f = wg_tma_family();
  const Target t;
  const auto each = [&](const GemmKey& key, const Params& p, const LaunchPlan& lp) {
    ASSERT_EQ(lp.launches.size(), 1u) << "splits are reduced in a cluster, not a second launch";
    const auto& g = lp.launches[0].grid;
    const long long ctas = static_cast<long long>(g[0]) * g[1] * g[2];
    EXPECT_EQ(lp.workspace_bytes, static_cast<std::uint64_t>(ctas * 256)) << "two tensor maps per CTA";
    EXPECT_EQ(p.at("KD_CLUSTER"), p.at("KD_SPLITK") > 1 ? 1 : 0);
    if (p.at("KD_SPLITK") > 2) {
      EXPECT_LE(2 * (lp.launches[0].smem_bytes + 1024), static_cast<std::uint32_t>(t.smem_optin_bytes + 1024))
          << "clusters of four only with two CTAs per SM: " << describe(p);
    }
    EXPECT_EQ(lp.launches[0].block[0], 128u * (p.at("KD_WG") + 1));
    EXPECT_EQ(g[0], static_cast<std::uint32_t>((key.n + p.at("KD_BN") - 1) / p.at("KD_BN"))) << "n tiles on x";
  };
  test::check_hopper_seeds(f, t, each, [&](const GemmKey& key, const std::vector<Params>& seeds) {
    EXPECT_LE(seeds.size(), 3u);
    // The wave model's first pick fills at least two thirds of the SMs.
    const auto& g0 = f.plan(key, t, seeds.front()).launches[0].grid;
    EXPECT_GE(3LL * g0[0] * g0[1] * g0[2], 2LL * t.sms) << key.shape_line() << " " << describe(seeds.front());
  });
}

// The wave model's picks on the shapes the issue names (one H200: 132 SMs, 227 KB per block).
TEST(WgTma, SeedsFillTheSmsOnTheN256Shapes) {
  const Family& f = wg_tma_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  const auto seeds = completed_seeds(f, key, t);
  ASSERT_FALSE(seeds.empty());
  // 128 x 128 tiles are 64 CTAs; two splits in a cluster make 128, one per SM.
  EXPECT_EQ(describe(seeds.front()), "KD_BN=128 KD_CLUSTER=1 KD_CTAS=1 KD_MW=1 KD_SPLITK=2 KD_STAGES=6 KD_WG=2");
}

TEST(WgTma, IdeasYieldValidDistinctConfigurations) {
  const auto [applied, ids] = test::sweep_ideas(wg_tma_family(), wg_tma_ideas());
  EXPECT_GT(applied, 40);
  EXPECT_GE(ids.size(), 8u);
}

// Every distinct rendered configuration (seeds and one idea step from them, a batched bias call with
// ragged edges, f16 with an f32 output) compiles with NVRTC for sm_90a without spills and without
// wgmma serialization.
TEST(WgTma, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const std::vector<std::string> extra = {
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=1000 n=300 k=504 lda=504 ldb=504 ldc=1000 batch=2 "
      "stride_a=504000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
      "gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=N m=777 n=333 k=560 lda=560 ldb=560 ldc=777 batch=1 "
      "epilogue=none beta0=1"};
  const std::vector<std::string> sources = test::seeds_and_first_steps(
      wg_tma_family(), Target{}, wg_tma_ideas(), extra,
      [](const GemmKey& key) { return key.m == 4096 && key.k == 4096 && key.n == 256; });
  ASSERT_GE(sources.size(), 10u);
  const auto two = std::count_if(sources.begin(), sources.end(),
                                 [](const std::string& s) { return s.find("#define KD_CTAS 2") != std::string::npos; });
  EXPECT_GE(two, 2) << "register budgets for two CTAs per SM are compiled too";
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/true);
}

// tools/dev/lab_wg_tma.json (the GPU lab's variants) agrees with the family's rules.
TEST(WgTma, LabConfigMatchesTheFamilyRules) {
  int variants = 0;
  ASSERT_NO_FATAL_FAILURE(test::check_lab_config("lab_wg_tma.json", wg_tma_family(), variants));
  EXPECT_GE(variants, 60);
}

// ---- wg_tma_f32: the TF32 class through f16 copies (issue 30) -----------------------------------

std::string tf32_line(const char* ta, const char* tb, long long m, long long n, long long k,
                      const char* precision = " precision=tf32") {
  return fmt::format("gemm a=f32 b=f32 c=f32 compute=f32 ta={} tb={} m={} n={} k={} lda={} ldb={} ldc={} batch=1 "
                     "epilogue=none beta0=1{}",
                     ta, tb, m, n, k, std::string(ta) == "T" ? k : m, std::string(tb) == "N" ? k : n, m, precision);
}

// The plan both f16-copy families make for `p`: the source's plan comment agrees with it, and the copies
// run first, the product second as their programmatic dependent.
LaunchPlan checked_copies_plan(const Family& f, const GemmKey& key, const Target& t, const Params& p) {
  const LaunchPlan lp = f.plan(key, t, p);
  const auto parsed = parse_plan_from_source(render(f, key, t, p));
  EXPECT_TRUE(std::holds_alternative<LaunchPlan>(parsed));
  if (std::holds_alternative<LaunchPlan>(parsed)) {
    EXPECT_EQ(std::get<LaunchPlan>(parsed), lp);
  }
  EXPECT_EQ(lp.launches.size(), 2u);
  if (lp.launches.size() == 2) {
    EXPECT_EQ(lp.launches[0].entry, "kd_wg_tma_split16");
    EXPECT_TRUE(lp.launches[1].pdl) << "the product waits on the copies' grid";
  }
  return lp;
}

// Every idea move of an f16-copy family from every seed of `key`: valid, and KD_SPLIT16 kept; returns
// how many applied.
int applied_copy_moves(const Family& f, std::span<const IdeaMove> moves, const GemmKey& key, long long split16) {
  const Target t;
  int applied = 0;
  for (const Params& p : completed_seeds(f, key, t))
    for (const IdeaMove& m : moves) {
      EXPECT_EQ(m.family, f.name);
      const auto moved = apply_idea(m, f, key, t, p);
      if (!moved) continue;
      ++applied;
      EXPECT_TRUE(f.valid(key, t, *moved)) << m.id;
      EXPECT_EQ(moved->at("KD_SPLIT16"), split16) << m.id;
    }
  return applied;
}

// The keys both f16-copy families compile every seed and one idea step of: the four layouts and a
// ragged strided batch with bias, in `precision` (a key line suffix).
std::vector<std::string> copy_family_lines(const char* precision) {
  return {tf32_line("N", "N", 4096, 4096, 4096, precision), tf32_line("T", "N", 4096, 4096, 4096, precision),
          tf32_line("N", "T", 2048, 2048, 2048, precision), tf32_line("T", "T", 1024, 1024, 1024, precision),
          std::string("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=300 k=1001 lda=1000 ldb=301 ldc=1000 "
                      "batch=3 stride_a=1001000 stride_b=301301 stride_c=300000 epilogue=bias beta0=0") +
              precision};
}

TEST(WgTmaF32, ServesTheTf32ClassInEveryLayoutAndNothingElse) {
  const Family& f = wg_tma_f32_family();
  EXPECT_EQ(f.name, "wg_tma_f32");
  EXPECT_NE(f.source.find("kd_wg_tma_split16("), std::string_view::npos);
  EXPECT_FALSE(f.trial) << "it passed the gate on a GPU and won the TF32 class's 4096^3 keys";
  for (const char* ta : {"N", "T"})
    for (const char* tb : {"N", "T"}) {
      const std::string line = tf32_line(ta, tb, 4096, 4096, 4096);
      EXPECT_FALSE(not_searched_for(f, key_of(line)).has_value()) << line;
      EXPECT_NE(f.rejects(key_of(tf32_line(ta, tb, 4096, 4096, 4096, ""))).value_or("").find("strict fp32"),
                std::string::npos)
          << "one f16 product is TF32's precision, not strict fp32's";
    }
  // Ragged, unaligned leading dimensions: the first launch reads single floats.
  EXPECT_FALSE(not_searched_for(f, key_of("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=300 k=1001 "
                                          "lda=1001 ldb=301 ldc=1000 batch=1 epilogue=bias beta0=0 precision=tf32"))
                   .has_value());
  EXPECT_NE(f.rejects(key_of("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 "
                             "ldc=4096 batch=1 epilogue=none beta0=1"))
                .value_or("")
                .find("f32 A, B and C"),
            std::string::npos);
  EXPECT_NE(not_searched_for(f, key_of(tf32_line("T", "N", 4096, 16, 4096))).value_or("").find("padding"),
            std::string::npos);
  EXPECT_FALSE(f.rejects(key_of(tf32_line("T", "N", 4096, 16, 4096)))) << "declined, not rejected: a range may use it";
}

TEST(WgTmaF32, PlanCopiesBothOperandsThenMultipliesAsADependentLaunch) {
  const Family& f = wg_tma_f32_family();
  const Target t;
  for (const char* ta : {"N", "T"})
    for (const char* tb : {"N", "T"}) {
      const GemmKey key = key_of(tf32_line(ta, tb, 4096, 2048, 1001));
      const auto seeds = completed_seeds(f, key, t);
      ASSERT_FALSE(seeds.empty()) << key.shape_line();
      for (const Params& p : seeds) {
        ASSERT_TRUE(f.valid(key, t, p)) << describe(p);
        EXPECT_EQ(p.at("KD_SPLIT16"), 1);
        const LaunchPlan lp = checked_copies_plan(f, key, t, p);
        ASSERT_EQ(lp.launches.size(), 2u);
        EXPECT_FALSE(lp.launches[0].pdl);
        // A block per 8 rows, k-contiguous (a warp holds 2048 of k) or contiguous across k (a block
        // holds 2048 of k); or per 32 rows contiguous across k in the extra seeds (512 of k, two
        // blocks).
        const std::uint32_t a_blocks = key.ta == Transpose::T || p.at("KD_COPY_ROWS") == 8 ? 512 : 256;
        const std::uint32_t b_blocks = key.tb == Transpose::N || p.at("KD_COPY_ROWS") == 8 ? 256 : 128;
        EXPECT_EQ(lp.launches[0].grid[0], a_blocks + b_blocks) << key.shape_line() << " " << describe(p);
        EXPECT_EQ(lp.launches[0].block[0], 256u);
        EXPECT_EQ(lp.launches[1].entry, "kd_wg_tma");
        // The maps, both copies (rows of 1001 halves rounded to 1024: whole 128-byte lines) and one shift
        // per row.
        const auto& g = lp.launches[1].grid;
        const std::uint64_t maps = 256ull * g[0] * g[1] * g[2];
        EXPECT_GE(lp.workspace_bytes, maps + (4096 + 2048) * 1024 * 2 + (4096 + 2048) * 4);
        EXPECT_LE(lp.workspace_bytes, maps + (4096 + 2048) * 1024 * 2 + (4096 + 2048) * 4 + 5 * 256);
      }
    }
}

TEST(WgTmaF32, IdeasYieldValidDistinctConfigurations) {
  EXPECT_GE(applied_copy_moves(wg_tma_f32_family(), wg_tma_f32_ideas(), key_of(tf32_line("N", "N", 4096, 4096, 4096)),
                               1),
            8);
}

// Every seed and one idea step from the first, in the four layouts and a ragged strided batch with
// bias, compiles with NVRTC for sm_90a without spills.
TEST(WgTmaF32, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const std::vector<std::string> sources = test::seeds_and_first_steps(
      wg_tma_f32_family(), Target{}, wg_tma_f32_ideas(), copy_family_lines(" precision=tf32"),
      [](const GemmKey& key) { return key.m == 4096 && key.ta == Transpose::N; });
  ASSERT_GE(sources.size(), 10u);
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/true);
}

// tools/dev/lab_wg_tma_f32.json (the GPU lab's variants, with timings of the plan's parts) agrees with
// the family's rules.
TEST(WgTmaF32, LabConfigMatchesTheFamilyRules) {
  int variants = 0;
  ASSERT_NO_FATAL_FAILURE(test::check_lab_config("lab_wg_tma_f32.json", wg_tma_f32_family(), variants));
  EXPECT_GE(variants, 20);
}

// ---- wg_tma_f16s: strict f32 through hi and lo f16 copies (issue 30) -----------------------------

TEST(WgTmaF16s, ServesStrictF32InEveryLayoutAndNothingElse) {
  const Family& f = wg_tma_f16s_family();
  EXPECT_EQ(f.name, "wg_tma_f16s");
  EXPECT_FALSE(f.trial);
  for (const char* ta : {"N", "T"})
    for (const char* tb : {"N", "T"}) {
      const std::string line = tf32_line(ta, tb, 4096, 4096, 4096, "");
      EXPECT_FALSE(not_searched_for(f, key_of(line)).has_value()) << line;
      EXPECT_NE(f.rejects(key_of(tf32_line(ta, tb, 4096, 4096, 4096))).value_or("").find("wg_tma_f32"),
                std::string::npos)
          << "the TF32 class needs one product, not three";
    }
  // Ragged, unaligned leading dimensions, batched: the first launch reads single floats.
  EXPECT_FALSE(not_searched_for(f, key_of("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=1000 n=600 k=1001 "
                                          "lda=1001 ldb=601 ldc=1000 batch=4 stride_a=1001000 stride_b=601601 "
                                          "stride_c=600000 epilogue=bias beta0=0"))
                   .has_value());
  // Narrow outputs go to wg_tiled's f16 splits first, but a caller that asks for this family (the gate
  // test's ragged batch of 300 columns) still gets it.
  for (const auto& [m, n] : {std::pair{4096, 512}, std::pair{512, 4096}}) {
    const std::string line = tf32_line("T", "N", m, n, 4096, "");
    EXPECT_NE(not_searched_for(f, key_of(line)).value_or("").find("512 or fewer"), std::string::npos) << line;
    EXPECT_FALSE(f.rejects(key_of(line))) << line;
  }
  EXPECT_FALSE(not_searched_for(f, key_of(tf32_line("T", "N", 4096, 768, 4096, ""))).has_value());
  EXPECT_NE(f.rejects(key_of("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 "
                             "ldc=4096 batch=1 epilogue=none beta0=1"))
                .value_or("")
                .find("f32 A, B and C"),
            std::string::npos);
  EXPECT_NE(f.rejects(key_of(tf32_line("T", "N", 4096, 16, 4096, ""))).value_or("").find("copies"), std::string::npos)
      << "rejected, so that a range of narrow outputs does not try it either";
  EXPECT_NE(not_searched_for(f, key_of(tf32_line("T", "N", 777, 333, 555, ""))).value_or("").find("640^3"),
            std::string::npos);
  // 1000^3 took 18.2 us against cuBLAS's 62.8 (H200, session 40); wg_tiled's best, 24.3.
  EXPECT_FALSE(not_searched_for(f, key_of(tf32_line("T", "N", 1000, 1000, 1000, ""))).has_value());
  EXPECT_FALSE(f.rejects(key_of(tf32_line("T", "N", 777, 333, 555, "")))) << "declined, not rejected";
}

TEST(WgTmaF16s, PlanCopiesHiAndLoThenMultipliesAsADependentLaunch) {
  const Family& f = wg_tma_f16s_family();
  const Target t;
  for (const char* ta : {"N", "T"})
    for (const char* tb : {"N", "T"}) {
      const GemmKey key = key_of(tf32_line(ta, tb, 4096, 2048, 1001, ""));
      const auto seeds = completed_seeds(f, key, t);
      ASSERT_FALSE(seeds.empty()) << key.shape_line();
      for (const Params& p : seeds) {
        ASSERT_TRUE(f.valid(key, t, p)) << describe(p);
        EXPECT_EQ(p.at("KD_SPLIT16"), 2);
        EXPECT_LE(p.at("KD_MW") * p.at("KD_BN"), 128) << "the promotion's second set of accumulators";
        const LaunchPlan lp = checked_copies_plan(f, key, t, p);
        ASSERT_EQ(lp.launches.size(), 2u);
        // Four maps per CTA, the hi and lo copies of both operands, one shift per row.
        const auto& g = lp.launches[1].grid;
        const std::uint64_t maps = 512ull * g[0] * g[1] * g[2];
        const std::uint64_t copies = 2ull * (4096 + 2048) * 1024 * 2;
        EXPECT_GE(lp.workspace_bytes, maps + copies + (4096 + 2048) * 4);
        EXPECT_LE(lp.workspace_bytes, maps + copies + (4096 + 2048) * 4 + 7 * 256);
        // A stage holds A's and B's hi and lo tiles.
        EXPECT_GE(lp.launches[1].smem_bytes, static_cast<std::uint32_t>(
                                                 p.at("KD_STAGES") * 2 * (64 * p.at("KD_WG") * p.at("KD_MW") + p.at("KD_BN")) * 128));
      }
    }
  // 128 x 128 tiles lead on a large cube.
  const auto seeds = completed_seeds(f, key_of(tf32_line("T", "N", 4096, 4096, 4096, "")), t);
  ASSERT_FALSE(seeds.empty());
  EXPECT_EQ(seeds[0].at("KD_WG"), 2);
  EXPECT_EQ(seeds[0].at("KD_BN"), 128);
}

// The copies' cluster is as small as their k splits allow (a cluster launch costs about 2 us), none
// where no row is split, rows contiguous across k go in groups of 8, and the copy launch builds the
// product's tensor maps; a record made before KD_COPY_CLUSTER, KD_COPY_ROWS and KD_SHARED_MAPS keeps
// its clusters of 8, groups of 32 and per-CTA maps.
TEST(WgTmaF16s, CopiesRunInTheSmallestClusterTheirSplitsAllow) {
  const Family& f = wg_tma_f16s_family();
  const Target t;
  struct Case {
    const char *ta, *tb;
    long long m, k, cluster, blocks;  // n = m
  };
  // 8 rows per block, whole up to k = 2048, in either path.
  const Case cases[] = {{"T", "N", 1024, 1024, 1, 128 + 128},   {"T", "N", 1000, 1024, 1, 125 + 125},
                        {"N", "N", 1024, 1024, 1, 128 + 128},   {"T", "T", 1000, 1024, 1, 125 + 125},
                        {"N", "T", 1024, 1024, 1, 128 + 128},   {"T", "N", 4096, 4096, 2, 1024 + 1024},
                        {"N", "N", 4096, 4096, 2, 1024 + 1024}, {"N", "T", 8192, 8192, 4, 4096 + 4096}};
  for (const Case& c : cases) {
    const GemmKey key = key_of(tf32_line(c.ta, c.tb, c.m, c.m, c.k, ""));
    const auto seeds = completed_seeds(f, key, t);
    ASSERT_FALSE(seeds.empty()) << key.shape_line();
    int rows32 = 0;
    for (const Params& p : seeds) {
      EXPECT_EQ(p.at("KD_SHARED_MAPS"), 1) << "the first launch builds the maps";
      if (p.at("KD_COPY_ROWS") == 32) {  // the extra seeds of layouts with rows contiguous across k
        ++rows32;
        continue;
      }
      EXPECT_EQ(p.at("KD_COPY_ROWS"), 8);
      EXPECT_EQ(p.at("KD_COPY_CLUSTER"), c.cluster) << key.shape_line();
      EXPECT_EQ(checked_copies_plan(f, key, t, p).launches[0].grid[0], static_cast<std::uint32_t>(c.blocks))
          << key.shape_line();
    }
    const bool kcontiguous = std::string(c.ta) == "T" && std::string(c.tb) == "N";
    EXPECT_EQ(rows32, kcontiguous ? 0 : std::min<int>(2, static_cast<int>(seeds.size()) - rows32))
        << key.shape_line() << ": round 0 measures groups of 32 beside 8";
  }
  const GemmKey ragged = key_of(tf32_line("T", "N", 1000, 1000, 1024, ""));
  Params old = completed_seeds(f, ragged, t).at(0);
  old.erase("KD_COPY_CLUSTER");
  old.erase("KD_SHARED_MAPS");
  old.erase("KD_COPY_ROWS");
  ASSERT_TRUE(f.valid(ragged, t, old)) << "a record made before the three parameters";
  EXPECT_EQ(f.plan(ragged, t, old).launches[0].grid[0], 128u + 128u) << "125 groups per operand in clusters of 8";
  const GemmKey rows_key = key_of(tf32_line("N", "T", 1000, 1000, 1024, ""));
  Params old_rows = completed_seeds(f, rows_key, t).at(0);
  old_rows.erase("KD_COPY_CLUSTER");
  old_rows.erase("KD_COPY_ROWS");
  ASSERT_TRUE(f.valid(rows_key, t, old_rows));
  EXPECT_EQ(f.plan(rows_key, t, old_rows).launches[0].grid[0], 64u + 64u)
      << "32 groups of 32 rows per operand, each split in two, in clusters of 8";
  Params rows32 = completed_seeds(f, rows_key, t).at(0);
  rows32["KD_COPY_ROWS"] = 32;
  rows32 = f.complete(rows_key, t, rows32);
  EXPECT_EQ(rows32.at("KD_COPY_ROWS"), 32) << "an explicit 32 stays";
  EXPECT_EQ(rows32.at("KD_COPY_CLUSTER"), 2);
  EXPECT_EQ(f.plan(rows_key, t, rows32).launches[0].grid[0], 64u + 64u);
  rows32["KD_COPY_ROWS"] = 16;
  EXPECT_FALSE(f.valid(rows_key, t, rows32)) << "groups of 8 or 32 rows only";
  Params own = completed_seeds(f, ragged, t).at(0);
  own["KD_SHARED_MAPS"] = 0;
  EXPECT_EQ(f.complete(ragged, t, own).at("KD_SHARED_MAPS"), 0) << "per-CTA maps on request (the lab's product alone)";
  // No cluster at all compiles too (the seeds' NVRTC check covers clusters of 2 to 8), and so do the
  // groups of 8 rows contiguous across k, split and not.
  test::expect_nvrtc_clean({render(f, ragged, t, completed_seeds(f, ragged, t).at(0)),
                            render(f, rows_key, t, completed_seeds(f, rows_key, t).at(0)),
                            render(f, key_of(tf32_line("N", "T", 8192, 8192, 8192, "")), t,
                                   completed_seeds(f, key_of(tf32_line("N", "T", 8192, 8192, 8192, "")), t).at(0))},
                           /*no_wgmma_serialization=*/true);
}

// The rows paths' 16-byte stores stay whole. NVVM once split a quarter of the 8-row path's held stores
// into four 4-byte stores each (st.global.u32 at +0, +4, +8 and +12 of one address; CUDA 13.0), which
// cost 1 us of a 1024^3 NT call on an H200 (session 39). (It splits a few of the k-contiguous path's
// 8-byte stores into two where the 32-row path shares the launch; those are left as they are.)
TEST(WgTmaF16s, CopyLaunchStoresSixteenBytesAtOnce) {
  const Family& f = wg_tma_f16s_family();
  const Target t;
  std::vector<std::pair<std::string, std::string>> sources;  // what, source
  for (const char* tatb : {"NT", "NN", "TT"})
    for (long long rows : {8LL, 32LL}) {
      const GemmKey key = key_of(tf32_line(std::string(1, tatb[0]).c_str(), std::string(1, tatb[1]).c_str(), 1024,
                                           1024, 1024, ""));
      Params p = completed_seeds(f, key, t).at(0);
      p["KD_COPY_ROWS"] = rows;
      p = f.complete(key, t, p);
      ASSERT_TRUE(f.valid(key, t, p)) << describe(p);
      sources.emplace_back(fmt::format("{} 1024^3, groups of {}", tatb, rows), render(f, key, t, p));
    }
  for (const auto& [what, source] : sources) {
    const search::CompileOutput out = search::compile_cuda({.source = source, .name = "copies.cu", .arch = t.arch});
    ASSERT_EQ(out.status, search::CompileStatus::ok) << what << "\n" << out.log;
    const std::size_t at = out.ptx.find(".entry kd_wg_tma_split16(");
    ASSERT_NE(at, std::string::npos) << what;
    const std::size_t end = out.ptx.find(".entry", at + 1);
    const std::string copies = out.ptx.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const auto count = [&](const std::regex& re) {
      return std::distance(std::sregex_iterator(copies.begin(), copies.end(), re), std::sregex_iterator());
    };
    EXPECT_EQ(count(std::regex(R"(st\.global\.(u32|b32)\s+\[%rd[0-9]+\+(8|12)\])")), 0) << what << ": 16-byte stores split";
    EXPECT_GE(count(std::regex(R"(st\.global\.v4\.)")), 18) << what;
  }
}

// Where an operand's rows are contiguous across k, the search measures groups of 32 rows against the
// seeds' 8; the cluster follows the groups' k splits.
TEST(WgTmaF16s, SearchMeasuresBothRowGroupSizes) {
  const Family& f = wg_tma_f16s_family();
  const Target t;
  const auto move = [&](const char* ta, const char* tb, std::string_view id,
                        std::optional<Params> from = std::nullopt) -> std::optional<Params> {
    const GemmKey key = key_of(tf32_line(ta, tb, 1024, 1024, 1024, ""));
    for (const IdeaMove& m : wg_tma_f16s_ideas())
      if (m.id == id) return apply_idea(m, f, key, t, from ? *from : completed_seeds(f, key, t).at(0));
    ADD_FAILURE() << "no move " << id;
    return std::nullopt;
  };
  const auto nt32 = move("N", "T", "tma.copy_rows_32");  // from the first seed, groups of 8
  ASSERT_TRUE(nt32);
  EXPECT_EQ(nt32->at("KD_COPY_ROWS"), 32);
  EXPECT_EQ(nt32->at("KD_COPY_CLUSTER"), 2) << "32 rows hold 512 of k: two blocks per group";
  const auto nt8 = move("N", "T", "tma.copy_rows_8", nt32);
  ASSERT_TRUE(nt8);
  EXPECT_EQ(nt8->at("KD_COPY_ROWS"), 8);
  EXPECT_EQ(nt8->at("KD_COPY_CLUSTER"), 1);
  EXPECT_FALSE(move("N", "T", "tma.copy_rows_8")) << "the first seed holds groups of 8 already";
  EXPECT_FALSE(move("T", "N", "tma.copy_rows_32")) << "no rows contiguous across k";
}

TEST(WgTmaF16s, IdeasYieldValidDistinctConfigurations) {
  EXPECT_GE(applied_copy_moves(wg_tma_f16s_family(), wg_tma_f16s_ideas(),
                               key_of(tf32_line("N", "N", 4096, 4096, 4096, "")), 2),
            4);
}

TEST(WgTmaF16s, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const std::vector<std::string> sources = test::seeds_and_first_steps(
      wg_tma_f16s_family(), Target{}, wg_tma_f16s_ideas(), copy_family_lines(""),
      [](const GemmKey& key) { return key.m == 4096 && key.ta == Transpose::N; });
  ASSERT_GE(sources.size(), 8u);
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/true);
}

TEST(WgTmaF16s, LabConfigMatchesTheFamilyRules) {
  int variants = 0;
  ASSERT_NO_FATAL_FAILURE(test::check_lab_config("lab_wg_tma_f16s.json", wg_tma_f16s_family(), variants));
  EXPECT_GE(variants, 9);
}

}  // namespace
}  // namespace kd::builtin
