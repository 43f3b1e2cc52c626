// Which builtin configurations serve the decode-like token ranges 17..32 and 33..64 (issue 29: the
// default buckets above 16), on the CPU: nn.Linear(4096, 4096) in the cuBLAS form (m=4096 k=4096
// ta=T tb=N), f32 and bf16, on an H100's target (sm_90, 132 SMs). Every seed a range search proposes
// at the range's last n is held to range_candidate; which families serve, and why the others do not,
// is asserted. A serving configuration's range plan must equal the family's own plan at every n.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "builtin/builtin_proposer.hpp"
#include "builtin/family.hpp"
#include "support/scoped_env.hpp"
#include "tree/search_tree.hpp"
#include "range/range_candidate.hpp"

namespace kd::search::range {
namespace {

const builtin::Target kH100{"sm_90", 132, 232448, 9};

GemmKey decode_range(std::string_view dtype, std::string_view n) {
  const std::string line = fmt::format(
      "gemm a={0} b={0} c={0} compute=f32 ta=T tb=N m=4096 n={1} k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
      "epilogue=none beta0=1",
      dtype, n);
  const auto parsed = parse_key(line);
  EXPECT_TRUE(std::holds_alternative<GemmKey>(parsed)) << line;
  return std::get<GemmKey>(parsed).with_device({"sm_90", "NVIDIA H100 80GB HBM3", 132});
}

// The range plan computed for every n equals the family's exact plan there (workspace: the range's
// largest), so a launch at any n of the range is the launch an exact record would make.
void expect_exact_plans(const builtin::Family& f, const GemmKey& range, const builtin::Params& p,
                        const RangeCandidate& c) {
  EXPECT_FALSE(range_plan_problem(c.plan, range.n, range.n_hi));
  for (std::int64_t n = range.n; n <= range.n_hi; ++n) {
    const auto at = plan_at_n(c.plan, n);
    ASSERT_TRUE(std::holds_alternative<LaunchPlan>(at)) << f.name << " n=" << n;
    LaunchPlan exact = builtin::rendered_plan(f, range.at_n(n), kH100, p);
    EXPECT_LE(exact.workspace_bytes, c.plan.workspace_bytes) << f.name << " n=" << n;
    exact.workspace_bytes = c.plan.workspace_bytes;
    ASSERT_EQ(std::get<LaunchPlan>(at), exact) << f.name << " " << builtin::describe(p) << " n=" << n;
  }
}

// Per family: its valid seeds at the range's last n, how many serve the range, and why the others do
// not (each distinct reason once; a family that rejects the key at HI has no seeds, only its reason).
struct Served {
  int seeds = 0, serving = 0;
  std::set<std::string> refusals;
  bool any_refusal_contains(std::string_view text) const {
    return std::any_of(refusals.begin(), refusals.end(),
                       [&](const std::string& r) { return r.find(text) != std::string::npos; });
  }
};

std::map<std::string, Served, std::less<>> serving(const GemmKey& range) {
  std::map<std::string, Served, std::less<>> out;
  const GemmKey hi = range.at_n(range.n_hi);
  for (const builtin::Family& f : builtin::families()) {
    Served& s = out[std::string(f.name)];
    if (const auto why = f.rejects(hi)) {
      s.refusals.insert("rejects: " + *why);
      continue;
    }
    for (const builtin::Params& raw : f.seeds(hi, kH100)) {
      const builtin::Params p = f.complete(hi, kH100, raw);
      if (!f.valid(hi, kH100, p)) continue;
      ++s.seeds;
      auto made = range_candidate(f, range, kH100, p);
      if (const auto* c = std::get_if<RangeCandidate>(&made)) {
        ++s.serving;
        expect_exact_plans(f, range, p, *c);
      } else {
        s.refusals.insert(std::get<std::string>(made));
      }
    }
  }
  return out;
}

void expect_all_serve(const std::map<std::string, Served, std::less<>>& got, std::string_view family,
                      const GemmKey& range) {
  const Served& s = got.find(family)->second;
  EXPECT_GT(s.seeds, 0) << family << " " << range.shape_line();
  EXPECT_EQ(s.serving, s.seeds) << family << " " << range.shape_line() << ": "
                                << (s.refusals.empty() ? std::string() : *s.refusals.begin());
}

void expect_refused(const std::map<std::string, Served, std::less<>>& got, std::string_view family,
                    std::string_view why, const GemmKey& range) {
  const Served& s = got.find(family)->second;
  EXPECT_EQ(s.serving, 0) << family << " " << range.shape_line();
  EXPECT_TRUE(s.any_refusal_contains(why)) << family << " " << range.shape_line() << ": expected '" << why << "'";
}

TEST(RangeCandidateDecode, F32RangesAreServedByWgTiledTcTiledAndSimt) {
  // 17..32: wg_tiled's 32-column tiles serve the range with one column of tiles; skinny_bulk's KD_NT
  // (column tiles of 8) differs across the range.
  const GemmKey low = decode_range("f32", "17..32");
  const auto lo = serving(low);
  for (const char* f : {"wg_tiled", "tc_tiled", "simt_tiled"}) expect_all_serve(lo, f, low);
  expect_refused(lo, "skinny_bulk", "the parameters depend on n (KD_NT", low);
  expect_refused(lo, "skinny_mma", "f16/bf16 inputs only", low);
  expect_refused(lo, "wg_tma", "bf16 or f16 inputs", low);

  // 33..64: the same families; wg_tiled at n 33..47 was the gap (a rejection before issue 29's fix).
  const GemmKey high = decode_range("f32", "33..64");
  const auto hi = serving(high);
  for (const char* f : {"wg_tiled", "tc_tiled", "simt_tiled"}) expect_all_serve(hi, f, high);
  expect_refused(hi, "skinny_bulk", "is not skinny", high);
  expect_refused(hi, "wg_tma", "bf16 or f16 inputs", high);
}

TEST(RangeCandidateDecode, Bf16RangesAreServedByTcTiledWgTmaAndSimt) {
  // wg_tiled is f32 only (its 16-bit path measured slower than cuBLAS); wg_tma (a trial family)
  // declines n < 48 for an exact search only, so it serves both ranges.
  const GemmKey low = decode_range("bf16", "17..32");
  const auto lo = serving(low);
  for (const char* f : {"tc_tiled", "wg_tma", "simt_tiled"}) expect_all_serve(lo, f, low);
  expect_refused(lo, "wg_tiled", "f32 inputs only", low);
  expect_refused(lo, "skinny_bulk", "the parameters depend on n (KD_NT", low);
  expect_refused(lo, "skinny_mma", "the parameters depend on n (KD_NT", low);

  const GemmKey high = decode_range("bf16", "33..64");
  const auto hi = serving(high);
  for (const char* f : {"tc_tiled", "wg_tma", "simt_tiled"}) expect_all_serve(hi, f, high);
  expect_refused(hi, "wg_tiled", "f32 inputs only", high);
  expect_refused(hi, "skinny_mma", "is not skinny", high);
}

// The default bucket 3..4: simt_gemv's seeds fix KD_NMAX at the range's last n, so each serves the
// whole range, in bf16 and strict f32, with the same plan at every n; so do the range search's own
// seeds, which see the range key itself.
TEST(RangeCandidateDecode, SimtGemvServesTheThreeToFourBucket) {
  for (const char* dtype : {"bf16", "f32"}) {
    const GemmKey range = decode_range(dtype, "3..4");
    expect_all_serve(serving(range), "simt_gemv", range);
    const builtin::Family& f = *builtin::find_family("simt_gemv");
    const auto seeds = f.seeds(range, kH100);
    ASSERT_FALSE(seeds.empty());
    for (const builtin::Params& raw : seeds) {
      const builtin::Params p = f.complete(range, kH100, raw);
      EXPECT_EQ(p.at("KD_NMAX"), 4) << dtype;
      EXPECT_TRUE(std::holds_alternative<RangeCandidate>(range_candidate(f, range, kH100, p))) << dtype;
    }
  }
}

// The default buckets 5..8 and 9..16 in bf16: skinny_ws (session 29) has no parameter that depends on
// n, so every seed serves each whole bucket with one plan; f32 it rejects.
TEST(RangeCandidateDecode, SkinnyWsServesTheBucketsUpToSixteen) {
  for (const char* n : {"5..8", "9..16"}) {
    const GemmKey range = decode_range("bf16", n);
    expect_all_serve(serving(range), "skinny_ws", range);
  }
  const GemmKey f32 = decode_range("f32", "9..16");
  expect_refused(serving(f32), "skinny_ws", "f16/bf16 inputs only", f32);
}

TEST(RangeCandidateDecode, WgTiledServesAWholeRangeWithOneColumnOfTiles) {
  const GemmKey range = decode_range("f32", "17..32");
  const builtin::Family& f = *builtin::find_family("wg_tiled");
  const GemmKey hi = range.at_n(range.n_hi);
  const builtin::Params p = f.complete(hi, kH100, f.seeds(hi, kH100).front());
  auto made = range_candidate(f, range, kH100, p);
  ASSERT_TRUE(std::holds_alternative<RangeCandidate>(made)) << std::get<std::string>(made);
  const RangeCandidate& c = std::get<RangeCandidate>(made);
  const auto main = std::find_if(c.plan.launches.begin(), c.plan.launches.end(),
                                 [](const LaunchSpec& s) { return s.entry == "kd_wg_tiled"; });
  ASSERT_NE(main, c.plan.launches.end());
  EXPECT_EQ(main->grid[1], 1u) << "n <= 32: one 32-column tile";
  EXPECT_FALSE(main->grid_rule[1]) << "the same grid at every n";
  EXPECT_NE(c.source.find("#define KD_BN 32"), std::string::npos);
}

TEST(RangeCandidateDecode, ARangeSearchSeedsTheFamiliesThatOnlyDeclineItsLastN) {
  // wg_tma (a trial family, enabled here) declines bf16 n < 48 for an exact search only.
  test::ScopedEnv trial("KDISPATCH_TRIAL_FAMILIES", "wg_tma");
  SearchTree tree("t", "k");
  const GemmKey hi = decode_range("bf16", "17..32").at_n(32);
  const ProposalContext ctx{hi, kH100, tree};
  builtin::BuiltinProposer proposer;
  const auto has = [](const std::vector<Proposal>& seeds, std::string_view family) {
    return std::any_of(seeds.begin(), seeds.end(), [&](const Proposal& p) { return p.family == family; });
  };
  const auto exact = proposer.seeds(ctx);
  EXPECT_FALSE(has(exact, "wg_tma")) << "an exact n=32 search leaves it to the other families";
  EXPECT_TRUE(has(exact, "tc_tiled"));
  const auto ranged = builtin::BuiltinProposer::range_seeds(ctx);
  EXPECT_TRUE(has(ranged, "wg_tma"));
  EXPECT_GT(ranged.size(), exact.size()) << "wg_tma's seeds are added";
  // f32 17..47 columns: wg_tiled's m64n32 tiles serve an exact search and a range alike.
  const GemmKey f32 = decode_range("f32", "17..32").at_n(32);
  EXPECT_TRUE(has(proposer.seeds({f32, kH100, tree}), "wg_tiled"));
  const auto ranged32 = builtin::BuiltinProposer::range_seeds({f32, kH100, tree});
  // In family order: wg_tiled (a tensor-core family) before tc_tiled.
  const auto first = [&](std::string_view family) {
    return std::find_if(ranged32.begin(), ranged32.end(), [&](const Proposal& p) { return p.family == family; });
  };
  EXPECT_LT(first("wg_tiled"), first("tc_tiled"));
  // A family that rejects the key is not added: wg_tiled for bf16.
  const GemmKey bf16 = decode_range("bf16", "17..32").at_n(32);
  EXPECT_FALSE(has(builtin::BuiltinProposer::range_seeds({bf16, kH100, tree}), "wg_tiled"));
}

}  // namespace
}  // namespace kd::search::range
