#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "builtin/builtin_proposer.hpp"
#include "builtin/embedded_kernels.hpp"
#include "builtin/family.hpp"
#include "builtin/ideas.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "contract/candidate_checks.hpp"
#include "family_checks.hpp"
#include "plan/launch_plan.hpp"
#include "support/scoped_env.hpp"

namespace kd::builtin {
namespace {

using test::llama_keys;

TEST(BuiltinFamilies, EveryFamilyHasItsEmbeddedSource) {
  for (const Family& f : families()) {
    EXPECT_NE(f.source.find(f.entry), std::string_view::npos) << f.name;
  }
}

// A rendered source is one translation unit: the helpers the warpgroup families share
// (kernels/wg_common.cuh) are pasted in place of their include line, not left for NVRTC to find.
TEST(BuiltinFamilies, EverySourceIsSelfContained) {
  for (const Family& f : families()) {
    EXPECT_EQ(f.source.find("\n#include \""), std::string_view::npos) << f.name;
  }
  for (const char* name : {"wg_tiled", "wg_tma"}) {
    const Family* f = find_family(name);
    ASSERT_NE(f, nullptr);
    EXPECT_NE(f->source.find("kd_cluster_finish("), std::string_view::npos) << name;
    EXPECT_NE(f->source.find("#define KD_WG_COMMON_CUH"), std::string_view::npos) << name;
  }
  EXPECT_NE(embedded_kernel_file("wg_tma.cu").find("#include \"wg_common.cuh\""), std::string_view::npos);
  EXPECT_TRUE(embedded_kernel("no_such_file.cu").empty());
}

TEST(BuiltinFamilies, EveryLlamaShapeGetsSeedsWhosePlanMatchesTheSource) {
  const auto keys = llama_keys();
  ASSERT_GE(keys.size(), 40u);
  const Target t;
  search::SearchTree tree("t", "k");
  BuiltinProposer proposer;
  for (const GemmKey& key : keys) {
    const search::ProposalContext ctx{key, t, tree};
    const auto seeds = proposer.seeds(ctx);
    ASSERT_FALSE(seeds.empty()) << key.shape_line();
    for (const auto& s : seeds) {
      const auto plan = parse_plan_from_source(s.source);
      ASSERT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << s.source.substr(0, 300);
      const Family* f = find_family(s.family);
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(std::get<LaunchPlan>(plan), rendered_plan(*f, key, t, *parse_params(s.params))) << s.params;
    }
  }
}

// On sm_90 the families that can are seeded with their first launch a programmatic dependent
// ("pdl") of the application's previous kernel; NVRTC's PTX must then wait on the grid before any
// global access, or the contract checks reject every seed. One shape per family, every seed.
TEST(BuiltinFamilies, DependentFirstLaunchSeedsPassTheCompiledContractChecks) {
  kd::test::ScopedEnv trial("KDISPATCH_TRIAL_FAMILIES", "skinny_ws");  // opt-in, checked all the same
  const Target t;
  search::SearchTree tree("t", "k");
  BuiltinProposer proposer;
  std::map<std::string, std::string> first_key;  // family -> the shape its seeds are checked on
  for (const GemmKey& key : llama_keys()) {
    const search::ProposalContext ctx{key, t, tree};
    for (const auto& s : proposer.seeds(ctx)) {
      const Family* f = find_family(s.family);
      ASSERT_NE(f, nullptr);
      if (!f->pdl_first) continue;
      if (first_key.emplace(s.family, key.shape_line()).first->second != key.shape_line()) continue;
      const auto plan = std::get<LaunchPlan>(parse_plan_from_source(s.source));
      EXPECT_TRUE(plan.launches.front().pdl) << s.family << " " << s.params;
      const search::CompileOutput out = search::compile_cuda({.source = s.source, .name = "seed.cu", .arch = t.arch});
      ASSERT_EQ(out.status, search::CompileStatus::ok) << s.family << ": " << out.log;
      const auto rejection = search::check_compiled(plan, out.ptx, out.cubin, t.arch);
      EXPECT_FALSE(rejection) << s.family << " " << s.params << ": " << (rejection ? rejection->message : "");
    }
  }
  std::set<std::string> covered;
  for (const auto& [family, key] : first_key) covered.insert(family);
  EXPECT_EQ(covered,
            (std::set<std::string>{"simt_gemv", "skinny_ws", "skinny_bulk", "skinny_mma", "simt_tiled", "tc_tiled",
                                   "wg_tiled", "wg_tma_f16s"}));
}

// The f32 families on wg_tma's copies (strict and the TF32 class) are seeded on sm_90 with their
// first launch, the copies, a programmatic dependent; the copy kernel waits on the grid before its
// first load, so every seed passes the compiled contract checks. Cubes of 1024 in two layouts each.
TEST(BuiltinFamilies, CopyFirstSeedsOfTheF32TmaFamiliesAreDependentLaunches) {
  const Target t;
  search::SearchTree tree("t", "k");
  BuiltinProposer proposer;
  std::set<std::string> seen;
  for (const char* tail : {"", " precision=tf32"})
    for (const char* layout : {"ta=N tb=N", "ta=T tb=T"}) {
      const GemmKey key = std::get<GemmKey>(parse_key(
          fmt::format("gemm a=f32 b=f32 c=f32 compute=f32 {} m=1024 n=1024 k=1024 lda=1024 ldb=1024 ldc=1024 "
                      "batch=1 epilogue=none beta0=1{}",
                      layout, tail)));
      const search::ProposalContext ctx{key, t, tree};
      for (const auto& s : proposer.seeds(ctx)) {
        if (s.family != "wg_tma_f16s" && s.family != "wg_tma_f32") continue;
        seen.insert(s.family);
        const auto plan = std::get<LaunchPlan>(parse_plan_from_source(s.source));
        ASSERT_EQ(plan.launches.size(), 2u) << s.params;
        EXPECT_EQ(plan.launches[0].entry, "kd_wg_tma_split16");
        EXPECT_TRUE(plan.launches[0].pdl) << s.family << " " << s.params;
        EXPECT_TRUE(plan.launches[1].pdl);
        const search::CompileOutput out = search::compile_cuda({.source = s.source, .name = "seed.cu", .arch = t.arch});
        ASSERT_EQ(out.status, search::CompileStatus::ok) << s.family << ": " << out.log;
        const auto rejection = search::check_compiled(plan, out.ptx, out.cubin, t.arch);
        EXPECT_FALSE(rejection) << s.family << " " << s.params << ": " << (rejection ? rejection->message : "");
      }
    }
  EXPECT_EQ(seen, (std::set<std::string>{"wg_tma_f16s", "wg_tma_f32"}));
}

TEST(BuiltinFamilies, SkinnyFamiliesRejectLayoutsTheyCannotServe) {
  const Family* bulk = find_family("skinny_bulk");
  const GemmKey nn = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"));
  const auto why = bulk->rejects(nn);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("ta=T tb=N"), std::string::npos);
  EXPECT_FALSE(find_family("simt_tiled")->rejects(nn).has_value());
}

// KD_BSMEM keeps B's columns in shared memory beside the ring: seeded for 16-bit n > 8 keys whose B
// fits with two stages, never where it cannot (k = 14336 at n = 16 is 459 KB), and the plan's
// shared memory counts it. The seed compiles and passes the contract checks.
// simt_gemv serves the linear layout up to 4 columns; its seeds split k over warps and its plan
// gives each CTA KD_WARPS / KD_KSPLIT rows.
TEST(BuiltinFamilies, SimtGemvServesFourColumnsAtMostAndSplitsK) {
  const Family* f = find_family("simt_gemv");
  ASSERT_NE(f, nullptr);
  const Target t;
  auto key_of = [](const char* line) { return std::get<GemmKey>(parse_key(line)); };
  const GemmKey decode = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=14336 n=1 k=4096 lda=4096 ldb=4096 ldc=14336 batch=1 "
      "epilogue=none beta0=1");
  ASSERT_FALSE(f->rejects(decode).has_value());
  const auto seeds = f->seeds(decode, t);
  ASSERT_FALSE(seeds.empty());
  const Params first = f->complete(decode, t, seeds.front());
  EXPECT_TRUE(f->valid(decode, t, first));
  EXPECT_EQ(first.at("KD_KSPLIT"), 4);
  EXPECT_EQ(first.at("KD_NMAX"), 1);
  const LaunchPlan plan = f->plan(decode, t, first);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].grid[0], static_cast<std::uint32_t>(14336 / (first.at("KD_WARPS") / 4)));
  EXPECT_EQ(plan.launches[0].block[0], static_cast<std::uint32_t>(32 * first.at("KD_WARPS")));

  const auto five = f->rejects(key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=5 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1"));
  ASSERT_TRUE(five.has_value());
  EXPECT_NE(five->find("not skinny"), std::string::npos);
  EXPECT_TRUE(f->rejects(key_of("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=1 k=4096 lda=4096 ldb=4096 "
                                "ldc=4096 batch=1 epilogue=none beta0=1"))
                  .has_value());

  Params odd = first;
  odd["KD_KSPLIT"] = 3;  // must divide the warps
  EXPECT_FALSE(f->valid(decode, t, odd));
  const GemmKey four = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  EXPECT_FALSE(f->valid(four, t, first)) << "KD_NMAX 1 cannot serve n = 4";
  EXPECT_EQ(f->complete(four, t, f->seeds(four, t).front()).at("KD_NMAX"), 4);
}

// skinny_ws (session 29): 16-bit decode GEMMs of 5..16 columns with k <= 4096 as exact keys; one
// persistent CTA of 16 warps per SM with a small ring (loads in flight share L1 with it).
TEST(BuiltinFamilies, SkinnyWsServesSixteenColumnsWithOnePersistentBlockPerSm) {
  const Family* f = find_family("skinny_ws");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->trial) << "its sums are not bitwise reproducible: opt-in only";
  const Target t;
  auto key_of = [](const char* line) { return std::get<GemmKey>(parse_key(line)); };
  const GemmKey up = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=28672 n=16 k=4096 lda=4096 ldb=4096 ldc=28672 batch=1 "
      "epilogue=none beta0=1");
  ASSERT_FALSE(not_searched_for(*f, up).has_value());
  const auto seeds = f->seeds(up, t);
  ASSERT_EQ(seeds.size(), 4u);
  for (const Params& raw : seeds) {
    const Params p = f->complete(up, t, raw);
    EXPECT_TRUE(f->valid(up, t, p)) << describe(p);
    const LaunchPlan plan = f->plan(up, t, p);
    ASSERT_EQ(plan.launches.size(), 1u);
    EXPECT_EQ(plan.launches[0].grid[0], static_cast<std::uint32_t>(t.sms));
    EXPECT_EQ(plan.launches[0].block[0], 512u);
    EXPECT_LE(plan.launches[0].smem_bytes, 150u * 1024) << describe(p) << ": the ring stays small";
  }
  const Params first = seeds.front();
  EXPECT_EQ(first.at("KD_STAGE_K"), 256);
  EXPECT_EQ(first.at("KD_STAGES"), 2);
  // A small m: one block per octet, fewer blocks than SMs.
  const GemmKey small = key_of(
      "gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=N m=100 n=9 k=1000 lda=1000 ldb=1000 ldc=100 batch=3 "
      "stride_a=100000 stride_b=9000 stride_c=900 epilogue=bias beta0=0");
  ASSERT_FALSE(f->rejects(small).has_value());
  const LaunchPlan small_plan = f->plan(small, t, first);
  EXPECT_EQ(small_plan.launches[0].grid[0], 13u);
  EXPECT_EQ(small_plan.launches[0].grid[2], 3u);

  // f32, other layouts and more than 16 columns are rejected; n <= 4 and k > 4096 only declined.
  EXPECT_TRUE(f->rejects(key_of("gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 "
                                "ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"))
                  .has_value());
  EXPECT_TRUE(f->rejects(key_of("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=17 k=4096 lda=4096 "
                                "ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"))
                  .has_value());
  const GemmKey four = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=4 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  EXPECT_FALSE(f->rejects(four).has_value());
  ASSERT_TRUE(f->declines(four).has_value());
  EXPECT_NE(f->declines(four)->find("simt_gemv"), std::string::npos);
  const GemmKey down = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=14336 lda=14336 ldb=14336 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  EXPECT_FALSE(f->rejects(down).has_value());
  ASSERT_TRUE(f->declines(down).has_value());
  EXPECT_TRUE(f->valid(down, t, first)) << "correct there, only not searched for as an exact key";

  Params deep = first;
  deep["KD_STAGE_K"] = 512;
  deep["KD_STAGES"] = 4;  // 278 KB of stages
  EXPECT_FALSE(f->valid(up, t, deep));
  Target ampere;
  ampere.arch = "sm_80";
  ampere.cc_major = 8;
  EXPECT_FALSE(f->valid(up, ampere, first)) << "setmaxnreg needs sm_90a";
}

TEST(BuiltinFamilies, SkinnyBulkHoldsBInSharedMemoryOnlyWhereItFits) {
  const Target t;
  const Family* bulk = find_family("skinny_bulk");
  const GemmKey up = std::get<GemmKey>(parse_key("linear dtype=bf16 tokens=16 in=4096 out=28672"));
  const GemmKey down = std::get<GemmKey>(parse_key("linear dtype=bf16 tokens=16 in=14336 out=4096"));
  std::optional<Params> held;
  for (const Params& raw : bulk->seeds(up, t))
    if (raw.count("KD_BSMEM") && raw.at("KD_BSMEM") == 1) held = bulk->complete(up, t, raw);
  ASSERT_TRUE(held.has_value());
  ASSERT_TRUE(bulk->valid(up, t, *held));
  EXPECT_GE(held->at("KD_STAGES"), 2);
  const LaunchSpec s = bulk->plan(up, t, *held).launches.front();
  const long long b_bytes = 16 * (4096 * 2 + 64);
  EXPECT_GE(s.smem_bytes, b_bytes + held->at("KD_STAGES") * held->at("KD_ROWS") * (held->at("KD_KC") * 2 + 64));
  EXPECT_LE(s.smem_bytes + 1024, t.smem_optin_bytes);

  for (const Params& raw : bulk->seeds(down, t)) {
    EXPECT_FALSE(raw.count("KD_BSMEM") && raw.at("KD_BSMEM") != 0) << "B of 14336 x 16 cannot fit";
    Params on = bulk->complete(down, t, raw);
    on["KD_BSMEM"] = 1;
    EXPECT_FALSE(bulk->valid(down, t, bulk->complete(down, t, on)));
  }

  const std::string source = render(*bulk, up, t, *held);
  const auto plan = std::get<LaunchPlan>(parse_plan_from_source(source));
  const search::CompileOutput out = search::compile_cuda({.source = source, .name = "bsmem.cu", .arch = t.arch});
  ASSERT_EQ(out.status, search::CompileStatus::ok) << out.log;
  const auto rejection = search::check_compiled(plan, out.ptx, out.cubin, t.arch);
  EXPECT_FALSE(rejection) << (rejection ? rejection->message : "");
}

TEST(IdeaCatalogue, MovesStayValidAndChangeTheParameters) {
  const Target t;
  int applied = 0;
  for (const GemmKey& key : llama_keys()) {
    for (const Family& f : families()) {
      if (not_searched_for(f, key)) continue;
      for (const Params& raw : f.seeds(key, t)) {
        const Params p = f.complete(key, t, raw);
        if (!f.valid(key, t, p)) continue;
        for (const IdeaMove& m : idea_catalogue()) {
          const auto moved = apply_idea(m, f, key, t, p);
          if (!moved) continue;
          ++applied;
          EXPECT_NE(*moved, p) << m.id;
          EXPECT_TRUE(f.valid(key, t, *moved)) << m.id;
          EXPECT_FALSE(m.text(key, t, p).empty());
        }
      }
    }
  }
  EXPECT_GT(applied, 200);
}

TEST(IdeaCatalogue, TextCarriesTheNumbersThatMotivateTheMove) {
  const Target t;  // 132 SMs
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1"));
  const Family* f = find_family("simt_tiled");
  const Params p{{"KD_BM", 128}, {"KD_BN", 128}, {"KD_BK", 8}, {"KD_TM", 8}, {"KD_TN", 8}};
  for (const IdeaMove& m : idea_catalogue()) {
    if (m.id == std::string_view("simt.tile_half")) {
      EXPECT_EQ(m.text(key, t, p), "halve the block tile to 64x64: 21 tiles cannot fill 132 SMs");
    }
  }
  ASSERT_NE(f, nullptr);
}

TEST(BuiltinProposer, IdeasPreferMovesThatFillIdleSmsAndSkipTriedOnes) {
  const Target t;
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1"));
  search::SearchTree tree("t", "k");
  search::Node seed;
  seed.proposer = "builtin";
  seed.family = "simt_tiled";
  seed.params = "KD_BK=8 KD_BM=128 KD_BN=128 KD_TM=8 KD_TN=8";
  seed.verdict = "passed";
  seed.candidate_us = 10;
  seed.id = tree.add(seed);
  BuiltinProposer proposer;
  const search::ProposalContext ctx{key, t, tree};
  const auto ideas = proposer.ideas(ctx, seed, 3);
  ASSERT_FALSE(ideas.empty());
  EXPECT_EQ(ideas.front().handle, "simt.tile_half");
  const auto impls = proposer.implement(ctx, seed, ideas.front(), 2);
  ASSERT_EQ(impls.size(), 2u);
  EXPECT_NE(impls[0].source, impls[1].source);
  search::Node child;
  child.parent = seed.id;
  child.idea = ideas.front().text;
  child.source_hash = search::source_hash(impls[0].source);
  tree.add(child);
  for (const auto& idea : proposer.ideas(ctx, seed, 10)) EXPECT_NE(idea.text, ideas.front().text);
}

TEST(BuiltinProposer, ReseedsFromACachedWinnerOfANearbyShape) {
  const Target t;
  const GemmKey a = std::get<GemmKey>(parse_key("linear dtype=bf16 tokens=16 in=4096 out=4096"));
  const GemmKey b = std::get<GemmKey>(parse_key("linear dtype=bf16 tokens=8 in=4096 out=6144"));
  const Family* f = find_family("skinny_bulk");
  const Params p = f->complete(a, t, {{"KD_ROWS", 32}, {"KD_KC", 512}, {"KD_WARPS", 4}, {"KD_CTAS_PER_SM", 2}});
  const auto seed = BuiltinProposer::reseed(b, t, render(*f, a, t, p));
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(seed->family, "skinny_bulk");
  EXPECT_NE(seed->source.find("m=6144"), std::string::npos);
  EXPECT_FALSE(BuiltinProposer::reseed(b, t, "extern \"C\" __global__ void k() {}").has_value());
}

// A trial family (wg_tma) is seeded only when KDISPATCH_TRIAL_FAMILIES names it, or says "all".
TEST(BuiltinProposer, SeedsATrialFamilyOnlyWhenTheEnvironmentNamesIt) {
  const Target t;
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"));
  const Family* tma = find_family("wg_tma");
  ASSERT_NE(tma, nullptr);
  ASSERT_TRUE(tma->trial);
  ASSERT_FALSE(tma->rejects(key).has_value());
  search::SearchTree tree("t", "k");
  const search::ProposalContext ctx{key, t, tree};
  auto count = [&] {
    int n = 0;
    for (const auto& s : BuiltinProposer().seeds(ctx)) n += s.family == "wg_tma";
    return n;
  };
  ::unsetenv("KDISPATCH_TRIAL_FAMILIES");
  EXPECT_EQ(count(), 0);
  for (const char* on : {"wg_tma", "skinny_mma,wg_tma", "all"}) {
    ::setenv("KDISPATCH_TRIAL_FAMILIES", on, 1);
    EXPECT_GT(count(), 0) << on;
  }
  for (const char* off : {"", "wg_tm", "wg_tma_x,other"}) {
    ::setenv("KDISPATCH_TRIAL_FAMILIES", off, 1);
    EXPECT_EQ(count(), 0) << off;
  }
  ::unsetenv("KDISPATCH_TRIAL_FAMILIES");
  for (const Family& f : families()) EXPECT_EQ(family_enabled(f), !f.trial) << f.name;
}

// A family list (kdctl search --family) seeds exactly the listed families, on keys they do not reject,
// their cost-based declines set aside: wg_tma_f16s on a batched attention shape it declines (work
// below 1024^3, 512 columns), a trial family without the environment, nothing where every listed
// family rejects the key; a range search's seeds follow the same list.
TEST(BuiltinProposer, AFamilyListSeedsOnlyThoseFamiliesOnKeysTheyDoNotReject) {
  const Target t;
  search::SearchTree tree("t", "k");
  const auto families_of = [](const std::vector<search::Proposal>& seeds) {
    std::set<std::string> out;
    for (const auto& s : seeds) out.insert(s.family);
    return out;
  };
  const GemmKey bmm = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=512 n=512 k=64 lda=64 ldb=64 ldc=512 batch=32 "
      "stride_a=32768 stride_b=32768 stride_c=262144 epilogue=none beta0=1"));
  const search::ProposalContext ctx{bmm, t, tree};
  ASSERT_TRUE(not_searched_for(*find_family("wg_tma_f16s"), bmm).has_value()) << "declined by its rules";
  EXPECT_EQ(families_of(BuiltinProposer().seeds(ctx)).count("wg_tma_f16s"), 0u);
  EXPECT_EQ(families_of(BuiltinProposer({"wg_tma_f16s"}).seeds(ctx)), std::set<std::string>{"wg_tma_f16s"});
  EXPECT_EQ(families_of(BuiltinProposer({"wg_tma_f16s", "wg_tiled"}).seeds(ctx)),
            (std::set<std::string>{"wg_tma_f16s", "wg_tiled"}));
  ::unsetenv("KDISPATCH_TRIAL_FAMILIES");
  const GemmKey bf16 = std::get<GemmKey>(parse_key(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1"));
  const search::ProposalContext bf16_ctx{bf16, t, tree};
  EXPECT_EQ(families_of(BuiltinProposer({"wg_tma"}).seeds(bf16_ctx)), std::set<std::string>{"wg_tma"})
      << "a listed trial family needs no KDISPATCH_TRIAL_FAMILIES";
  EXPECT_TRUE(BuiltinProposer({"wg_tma_f16s"}).seeds(bf16_ctx).empty()) << "f32 only: rejected, not seeded";
  EXPECT_EQ(families_of(BuiltinProposer::range_seeds(ctx, std::vector<std::string>{"wg_tma_f16s"})),
            std::set<std::string>{"wg_tma_f16s"});
  EXPECT_TRUE(is_builtin_family("wg_tma_f16s"));
  EXPECT_TRUE(is_builtin_family("row_reduce"));
  EXPECT_FALSE(is_builtin_family("wg_tma_f16"));
}

}  // namespace
}  // namespace kd::builtin
