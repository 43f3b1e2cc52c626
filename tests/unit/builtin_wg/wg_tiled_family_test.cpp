#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "builtin/family_wg_tiled.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {
namespace {

std::string source_dir() {
  const char* root = std::getenv("KD_SOURCE_DIR");
  return root ? root : ".";
}

std::vector<GemmKey> llama_keys() {
  std::ifstream in(source_dir() + "/tools/shapes/llama3-8b.txt");
  std::vector<GemmKey> keys;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("gemm", 0) == 0) keys.push_back(std::get<GemmKey>(parse_key(line)));
  return keys;
}

GemmKey key_of(const std::string& line) { return std::get<GemmKey>(parse_key(line)); }

std::vector<Params> completed_seeds(const Family& f, const GemmKey& key, const Target& t) {
  std::vector<Params> out;
  for (const Params& raw : f.seeds(key, t)) out.push_back(f.complete(key, t, raw));
  return out;
}

TEST(WgTiled, RowCarriesItsEmbeddedSource) {
  const Family& f = wg_tiled_family();
  EXPECT_EQ(f.name, "wg_tiled");
  EXPECT_NE(f.source.find("kd_wg_tiled("), std::string_view::npos);
  EXPECT_NE(f.source.find("kd_wg_tiled_reduce("), std::string_view::npos);
}

TEST(WgTiled, ServesTheF32ShapesWithAtLeast48Columns) {
  const Family& f = wg_tiled_family();
  int served = 0;
  for (const GemmKey& key : llama_keys()) {
    const bool want = key.a == DType::f32 && key.n >= 48 && key.lda % 4 == 0;
    EXPECT_EQ(!f.rejects(key).has_value(), want) << key.shape_line();
    served += want;
  }
  EXPECT_EQ(served, 5);  // 4096^3 and the four n = 128 shapes
  const GemmKey bf16 = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=256 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  ASSERT_TRUE(f.rejects(bf16).has_value());
  EXPECT_NE(f.rejects(bf16)->find("f32"), std::string::npos);
  const GemmKey odd_ld = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1");
  EXPECT_TRUE(f.rejects(odd_ld).has_value());
}

TEST(WgTiled, SeedsAreValidOnHopperOnlyAndThePlanInTheSourceMatches) {
  const Family& f = wg_tiled_family();
  const Target t;
  Target ampere;
  ampere.arch = "sm_80";
  ampere.cc_major = 8;
  for (const GemmKey& key : llama_keys()) {
    if (f.rejects(key)) continue;
    const auto seeds = completed_seeds(f, key, t);
    ASSERT_FALSE(seeds.empty()) << key.shape_line();
    for (const Params& p : seeds) {
      ASSERT_TRUE(f.valid(key, t, p)) << key.shape_line() << " " << describe(p);
      EXPECT_FALSE(f.valid(key, ampere, p)) << "wgmma needs sm_90a";
      EXPECT_EQ(p.at("KD_3XTF32"), 1) << "strict fp32 needs error compensation";
      const auto plan = parse_plan_from_source(render(f, key, t, p));
      ASSERT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << describe(p);
      const auto& lp = std::get<LaunchPlan>(plan);
      EXPECT_EQ(lp, f.plan(key, t, p));
      const bool split = p.at("KD_SPLITK") > 1;
      EXPECT_EQ(lp.launches.size(), split ? 2u : 1u);
      EXPECT_EQ(lp.workspace_bytes, split ? static_cast<std::uint64_t>(p.at("KD_SPLITK") * key.m * key.n * 4) : 0u);
      const auto& g = lp.launches[0].grid;
      EXPECT_GE(static_cast<long long>(g[0]) * g[1] * g[2], t.sms / 2) << key.shape_line() << " " << describe(p);
    }
  }
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

TEST(WgTiled, IdeasYieldValidDistinctConfigurations) {
  const Family& f = wg_tiled_family();
  const Target t;
  int applied = 0;
  std::set<std::string> ids;
  for (const GemmKey& key : llama_keys()) {
    if (f.rejects(key)) continue;
    for (const Params& p : completed_seeds(f, key, t)) {
      std::set<Params> seen{p};
      for (const IdeaMove& m : wg_tiled_ideas()) {
        EXPECT_EQ(m.family, "wg_tiled");
        const auto moved = apply_idea(m, f, key, t, p);
        if (!moved) continue;
        ++applied;
        ids.insert(std::string(m.id));
        EXPECT_TRUE(f.valid(key, t, *moved)) << m.id;
        EXPECT_TRUE(seen.insert(*moved).second) << m.id << " repeats a configuration: " << describe(*moved);
        EXPECT_FALSE(m.text(key, t, p).empty());
      }
    }
  }
  EXPECT_GT(applied, 40);
  EXPECT_GE(ids.size(), 6u) << "most moves apply somewhere on the Llama shapes (the seeds already use two warpgroups)";
}

// Every distinct rendered configuration (seeds and one idea step from them, both layouts, strict and
// TF32, a batched bias call with ragged edges) compiles with NVRTC for sm_90 (as sm_90a) without
// spills and without wgmma serialization.
TEST(WgTiled, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const Family& f = wg_tiled_family();
  const Target t;
  std::set<std::string> bodies;
  std::vector<std::string> sources;
  auto add = [&](const GemmKey& key, const Params& p) {
    const std::string src = render(f, key, t, p);
    const auto at = src.find("#define");
    if (bodies.insert(src.substr(at)).second) sources.push_back(src);
  };
  std::vector<GemmKey> keys = llama_keys();
  for (const std::string line : {
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=1000 n=300 k=500 lda=1000 ldb=504 ldc=1000 batch=2 stride_a=504000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
           "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32"})
    keys.push_back(key_of(line));
  for (const GemmKey& key : keys) {
    if (f.rejects(key)) continue;
    const auto seeds = completed_seeds(f, key, t);
    for (const Params& p : seeds) add(key, p);
    if (key.m != 4096 || key.k != 4096) continue;  // one idea step from the first seed, both layouts
    for (const IdeaMove& m : wg_tiled_ideas())
      if (const auto moved = apply_idea(m, f, key, t, seeds.front())) add(key, *moved);
  }
  ASSERT_GE(sources.size(), 10u);
  const std::regex spill("([1-9][0-9]*) bytes spill stores");
  for (const std::string& src : sources) {
    search::CompileRequest req;
    req.source = src;
    req.extra_options = {"--ptxas-options=-v"};
    const search::CompileOutput out = search::compile_cuda(req);
    const std::string head = src.substr(0, src.find('\n'));
    ASSERT_EQ(out.status, search::CompileStatus::ok) << head << "\n" << out.log;
    EXPECT_FALSE(std::regex_search(out.log, spill)) << head << "\n" << out.log;
    EXPECT_EQ(out.log.find("serialized"), std::string::npos) << head << "\n" << out.log;
  }
}

// tools/dev/lab_wg_f32.json (the GPU lab's variants) agrees with the family's rules: every variant is
// valid for its case's key and carries exactly the family's launch plan.
TEST(WgTiled, LabConfigMatchesTheFamilyRules) {
  std::ifstream in(source_dir() + "/tools/dev/lab_wg_f32.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json cfg = nlohmann::json::parse(in);
  const Family& f = wg_tiled_family();
  const Target t;
  int variants = 0;
  for (const auto& c : cfg.at("cases")) {
    const std::string ta = c.value("ta", "T");
    const long long m = c.at("m"), n = c.at("n"), k = c.at("k");
    const GemmKey key = key_of(fmt::format(
        "gemm a=f32 b=f32 c=f32 compute=f32 ta={0} tb=N m={1} n={2} k={3} lda={4} ldb={3} ldc={1} batch=1 epilogue=none beta0=1",
        ta, m, n, k, ta == "T" ? k : m));
    ASSERT_FALSE(f.rejects(key));
    for (const auto& v : c.at("variants")) {
      ++variants;
      Params p;
      for (const auto& [name, value] : v.items())
        if (name.rfind("KD_", 0) == 0 && value.is_number_integer()) p[name] = value.get<long long>();
      ASSERT_TRUE(f.valid(key, t, p)) << describe(p);
      ASSERT_EQ(f.complete(key, t, p), p) << describe(p);
      const LaunchPlan plan = f.plan(key, t, p);
      ASSERT_EQ(v.at("launches").size(), plan.launches.size());
      for (std::size_t i = 0; i < plan.launches.size(); ++i) {
        const auto& l = v.at("launches")[i];
        EXPECT_EQ(l.at("entry").get<std::string>(), plan.launches[i].entry);
        EXPECT_EQ(l.at("grid").get<std::vector<std::uint32_t>>(),
                  std::vector<std::uint32_t>(plan.launches[i].grid.begin(), plan.launches[i].grid.end()));
        EXPECT_EQ(l.at("block").get<std::vector<std::uint32_t>>(),
                  std::vector<std::uint32_t>(plan.launches[i].block.begin(), plan.launches[i].block.end()));
        EXPECT_EQ(l.at("smem").get<std::uint32_t>(), plan.launches[i].smem_bytes);
      }
      EXPECT_EQ(v.at("workspace").get<std::uint64_t>(), plan.workspace_bytes);
    }
  }
  EXPECT_GE(variants, 20);
}

}  // namespace
}  // namespace kd::builtin
