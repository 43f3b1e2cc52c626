#include <gtest/gtest.h>

#include <set>

#include "builtin/family_tc_tiled.hpp"
#include "family_checks.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {
namespace {

using test::completed_seeds;
using test::key_of;
using test::llama_keys;

TEST(TcTiled, RowCarriesItsEmbeddedSource) {
  test::expect_row_source(tc_tiled_family(), "tc_tiled", {"kd_tc_tiled(", "kd_tc_tiled_reduce("});
}

TEST(TcTiled, RejectsWhatItCannotServe) {
  const Family& f = tc_tiled_family();
  const GemmKey tt = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=T m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 epilogue=none beta0=1");
  ASSERT_TRUE(f.rejects(tt).has_value());
  EXPECT_NE(f.rejects(tt)->find("tb=N"), std::string::npos);
  GemmKey mixed = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 epilogue=none beta0=1");
  mixed.b = DType::f16;
  EXPECT_TRUE(f.rejects(mixed).has_value());
  const GemmKey odd_ld = key_of(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1");
  EXPECT_TRUE(f.rejects(odd_ld).has_value());  // lda 777 is not a multiple of 4 floats
  for (const GemmKey& key : llama_keys()) {
    if (key.lda % 8 == 0 && key.ldb % 8 == 0) {
      EXPECT_FALSE(f.rejects(key).has_value()) << key.shape_line();
    }
  }
}

TEST(TcTiled, LlamaSeedsAreValidAndThePlanInTheSourceMatches) {
  const Family& f = tc_tiled_family();
  const Target t;
  int served = 0;
  for (const GemmKey& key : llama_keys()) {
    if (f.rejects(key)) continue;
    ++served;
    const auto seeds = completed_seeds(f, key, t);
    ASSERT_FALSE(seeds.empty()) << key.shape_line();
    for (const Params& p : seeds) {
      ASSERT_TRUE(f.valid(key, t, p)) << key.shape_line() << " " << describe(p);
      const auto plan = parse_plan_from_source(render(f, key, t, p));
      ASSERT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << describe(p);
      EXPECT_EQ(std::get<LaunchPlan>(plan), f.plan(key, t, p));
      // Split-K: a reduce launch and its workspace exactly when the split is > 1.
      const auto& lp = std::get<LaunchPlan>(plan);
      const bool split = p.at("KD_SPLITK") > 1;
      EXPECT_EQ(lp.launches.size(), split ? 2u : 1u);
      EXPECT_EQ(lp.workspace_bytes, split ? static_cast<std::uint64_t>(p.at("KD_SPLITK") * key.m * key.n * 4) : 0u);
      if (key.a == DType::f32) {
        EXPECT_EQ(p.at("KD_3XTF32"), 1) << "strict fp32 needs error compensation";
      }
    }
  }
  EXPECT_GE(served, 40);
}

TEST(TcTiled, SkinnyShapesSplitKToFillTheSms) {
  const Family& f = tc_tiled_family();
  const Target t;
  const GemmKey key = key_of(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=64 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  const Params p = completed_seeds(f, key, t).front();
  const LaunchPlan plan = f.plan(key, t, p);
  const auto& g = plan.launches[0].grid;
  EXPECT_GE(static_cast<long long>(g[0]) * g[1] * g[2], t.sms * 3 / 4) << describe(p);
  EXPECT_EQ(plan.launches.back().entry, "kd_tc_tiled_reduce");
}

TEST(TcTiled, Tf32CallsMayDropCompensationStrictOnesMayNot) {
  const Family& f = tc_tiled_family();
  const Target t;
  const std::string shape = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
  const GemmKey strict = key_of(shape);
  const GemmKey tf32 = key_of(shape + " precision=tf32");
  ASSERT_EQ(tf32.precision, PrecisionClass::tf32);
  Params p = completed_seeds(f, strict, t).front();
  p["KD_3XTF32"] = 0;
  EXPECT_FALSE(f.valid(strict, t, p));
  EXPECT_EQ(f.complete(strict, t, p).at("KD_3XTF32"), 1);
  EXPECT_TRUE(f.valid(tf32, t, f.complete(tf32, t, p)));
  EXPECT_EQ(completed_seeds(f, tf32, t).front().at("KD_3XTF32"), 0);
}

TEST(TcTiled, IdeasYieldValidDistinctConfigurations) {
  const auto [applied, ids] = test::sweep_ideas(tc_tiled_family(), tc_tiled_ideas());
  EXPECT_GT(applied, 100);
  EXPECT_GE(ids.size(), 8u) << "most moves apply somewhere on the Llama shapes";
}

// Every distinct rendered configuration (seeds and one idea step from them) compiles for sm_90
// with NVRTC, without spills.
TEST(TcTiled, SeedsAndIdeaStepsCompileWithNvrtcWithoutSpills) {
  const Family& f = tc_tiled_family();
  const Target t;
  test::DistinctSources distinct(f, t);
  const std::vector<std::string> extra = {
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=N tb=N m=1000 n=300 k=500 lda=1000 ldb=504 ldc=1000 batch=2 stride_a=504000 stride_b=151200 stride_c=300000 epilogue=bias beta0=0",
      "gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=N m=4096 n=128 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 precision=tf32"};
  std::vector<GemmKey> keys = llama_keys();
  for (const std::string& line : extra) {
    const auto parsed = parse_key(line);
    ASSERT_TRUE(std::holds_alternative<GemmKey>(parsed)) << line;
    keys.push_back(std::get<GemmKey>(parsed));
  }
  for (const GemmKey& key : keys) {
    if (f.rejects(key)) continue;
    for (const Params& p : completed_seeds(f, key, t)) {
      distinct.add(key, p);
      if (key.n != 4096) continue;  // one idea step on the large shapes covers the moves' corners
      for (const IdeaMove& m : tc_tiled_ideas())
        if (const auto moved = apply_idea(m, f, key, t, p)) distinct.add(key, *moved);
    }
  }
  const std::vector<std::string>& sources = distinct.sources();
  ASSERT_GE(sources.size(), 10u);
  test::expect_nvrtc_clean(sources, /*no_wgmma_serialization=*/false);
}

// tools/dev/lab_tc.json and lab_tc_f32.json (the GPU lab's variants) agree with the family's rules:
// every variant is valid for its case's key and carries exactly the family's launch plan.
class TcTiledLab : public ::testing::TestWithParam<const char*> {};

TEST_P(TcTiledLab, ConfigMatchesTheFamilyRules) {
  int variants = 0;
  ASSERT_NO_FATAL_FAILURE(test::check_lab_config(GetParam(), tc_tiled_family(), variants));
  EXPECT_GT(variants, 20);
  EXPECT_LE(variants, 150);
}
INSTANTIATE_TEST_SUITE_P(Labs, TcTiledLab, ::testing::Values("lab_tc.json", "lab_tc_f32.json"));

}  // namespace
}  // namespace kd::builtin
