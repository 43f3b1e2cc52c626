// Range candidates of the builtin families (issue 29), no GPU: fitting grid rules to exact plans,
// which configurations can serve a range, and where the range gate checks and times.
#include <gtest/gtest.h>

#include <numeric>

#include "builtin/family.hpp"
#include "range/plan_fit.hpp"
#include "range/range_candidate.hpp"
#include "range/range_points.hpp"

namespace kd::search::range {
namespace {

std::vector<std::int64_t> values_of(std::int64_t lo, std::int64_t hi, const std::function<std::int64_t(std::int64_t)>& f) {
  std::vector<std::int64_t> v;
  for (std::int64_t n = lo; n <= hi; ++n) v.push_back(f(n));
  return v;
}

GridRule fitted(std::int64_t lo, std::int64_t hi, const std::function<std::int64_t(std::int64_t)>& f) {
  const auto values = values_of(lo, hi, f);
  auto fit = fit_extent(values, lo);
  if (const auto* why = std::get_if<std::string>(&fit)) {
    ADD_FAILURE() << *why;
    return {};
  }
  const auto rule = std::get<ExtentFit>(fit).rule;
  if (!rule) {
    ADD_FAILURE() << "constant";
    return {};
  }
  for (std::int64_t n = lo; n <= hi; ++n) EXPECT_EQ(rule->at(n), f(n)) << "n=" << n;
  return *rule;
}

TEST(PlanFit, TileCountsPerColumnLaunchesAndCappedReductions) {
  fitted(129, 256, [](std::int64_t n) { return (n + 63) / 64; });
  fitted(1, 8192, [](std::int64_t n) { return (n + 127) / 128; });
  fitted(33, 64, [](std::int64_t n) { return 4 * n; });                       // batch * n blocks
  fitted(200, 300, [](std::int64_t n) { return 2 * ((n + 15) / 16) + 1; });   // mul and add
  fitted(1, 512, [](std::int64_t n) { return std::min<std::int64_t>(1056, (1000 * n + 255) / 256); });
  fitted(65, 128, [](std::int64_t n) { return std::min<std::int64_t>(1056, (4096 * n + 255) / 256); });
  fitted(100, 140, [](std::int64_t n) { return (n + 127) / 128; });           // one step inside
  fitted(4097, 8192, [](std::int64_t n) { return (3 * 768 * n + 1023) / 1024; });
}

TEST(PlanFit, ConstantsNeedNoRuleAndNonsenseIsNamed) {
  const std::vector<std::int64_t> flat(50, 7);
  EXPECT_FALSE(std::get<ExtentFit>(fit_extent(flat, 1)).rule);
  const std::vector<std::int64_t> down{3, 3, 2};
  EXPECT_EQ(std::get<std::string>(fit_extent(down, 10)), "it decreases from 3 at n=11 to 2 at n=12");
  std::vector<std::int64_t> squares = values_of(1, 40, [](std::int64_t n) { return n * n; });
  EXPECT_NE(std::get<std::string>(fit_extent(squares, 1)).find("follows no rule"), std::string::npos);
}

const builtin::Target kH100{"sm_90", 132, 232448, 9};

GemmKey range_key(std::string_view line) {
  const auto parsed = parse_key(line);
  EXPECT_TRUE(std::holds_alternative<GemmKey>(parsed)) << line;
  return std::get<GemmKey>(parsed).with_device({"sm_90", "NVIDIA H100 80GB HBM3", 132});
}

// The exact plan of the family at every n of the range equals the range plan computed for n.
void expect_serves(const builtin::Family& f, const GemmKey& key, const builtin::Params& p) {
  auto made = range_candidate(f, key, kH100, p);
  ASSERT_TRUE(std::holds_alternative<RangeCandidate>(made)) << f.name << ": " << std::get<std::string>(made);
  const RangeCandidate& c = std::get<RangeCandidate>(made);
  EXPECT_FALSE(range_plan_problem(c.plan, key.n, key.n_hi));
  for (std::int64_t n = key.n; n <= key.n_hi; ++n) {
    const auto at = plan_at_n(c.plan, n);
    ASSERT_TRUE(std::holds_alternative<LaunchPlan>(at));
    LaunchPlan exact = builtin::rendered_plan(f, key.at_n(n), kH100, p);
    exact.workspace_bytes = c.plan.workspace_bytes;  // the range's largest
    ASSERT_EQ(std::get<LaunchPlan>(at), exact) << f.name << " n=" << n;
  }
  // The source is the family's for any n but for its header's key and plan lines.
  const std::string exact_source = builtin::render(f, key.at_n(key.n_hi), kH100, p);
  const auto body = [](const std::string& s) { return s.substr(s.find("\n#define")); };
  EXPECT_EQ(body(c.source), body(exact_source));
  EXPECT_NE(c.source.find("// key: " + key.shape_line()), std::string::npos);
  const auto plan = parse_plan_from_source(c.source);
  ASSERT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << std::get<PlanError>(plan).message;
  EXPECT_EQ(std::get<LaunchPlan>(plan), c.plan);
}

builtin::Params seed_for(const builtin::Family& f, const GemmKey& key) {
  const auto seeds = f.seeds(key.at_n(key.n_hi), kH100);
  EXPECT_FALSE(seeds.empty()) << f.name;
  return seeds.empty() ? builtin::Params{} : f.complete(key.at_n(key.n_hi), kH100, seeds.front());
}

constexpr std::string_view kF32Range =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=129..256 k=768 lda=768 ldb=768 ldc=768 batch=1 "
    "epilogue=none beta0=1";

TEST(RangeCandidate, TiledFamiliesServeARangeWithTheirOwnGrids) {
  const GemmKey key = range_key(kF32Range);
  for (const char* name : {"simt_tiled", "tc_tiled", "wg_tiled"}) {
    const builtin::Family* f = builtin::find_family(name);
    ASSERT_NE(f, nullptr);
    for (const builtin::Params& seed : f->seeds(key.at_n(key.n_hi), kH100)) {
      const builtin::Params p = f->complete(key.at_n(key.n_hi), kH100, seed);
      auto made = range_candidate(*f, key, kH100, p);
      if (std::holds_alternative<RangeCandidate>(made)) expect_serves(*f, key, p);
    }
    expect_serves(*f, key, seed_for(*f, key));
  }
}

TEST(RangeCandidate, ParametersThatDependOnNRefuseTheRange) {
  const GemmKey narrow = range_key(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=9..16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1");
  const builtin::Family* bulk = builtin::find_family("skinny_bulk");
  ASSERT_NE(bulk, nullptr);
  expect_serves(*bulk, narrow, seed_for(*bulk, narrow));
  const GemmKey wide = narrow.with_n_range(9, 24);
  const auto refused = range_candidate(*bulk, wide, kH100, seed_for(*bulk, wide));
  ASSERT_TRUE(std::holds_alternative<std::string>(refused));
  EXPECT_NE(std::get<std::string>(refused).find("the parameters depend on n (KD_NT"), std::string::npos)
      << std::get<std::string>(refused);
}

TEST(RangePoints, EndsTilesCapsAndRaggedValues) {
  LaunchPlan plan;
  plan.launches.push_back({"kd_main", {12, 4, 1}, {256, 1, 1}, 0});
  plan.launches[0].grid_rule[1] = GridRule{.offset = 63, .div = 64};
  const RangePoints p = range_points(129, 256, plan);
  EXPECT_EQ(p.timed, (std::vector<std::int64_t>{129, 182, 256}));
  for (const std::int64_t n : {129L, 256L, 192L, 193L, 182L}) EXPECT_TRUE(std::ranges::count(p.checked, n)) << n;
  EXPECT_TRUE(std::ranges::any_of(p.checked, [](std::int64_t n) { return n % 2 == 1 && n != 129 && n != 193; }));
  EXPECT_LE(p.checked.size(), kMaxChecked);
  EXPECT_TRUE(std::ranges::is_sorted(p.checked));
  const RangePoints two = range_points(7, 8, plan);
  EXPECT_EQ(two.checked, (std::vector<std::int64_t>{7, 8}));
}

}  // namespace
}  // namespace kd::search::range
