// The search driver against real proposers and real NVRTC, with a scripted evaluation backend
// standing in for the GPU (CI has none; the GPU tests run the real worker).
#include "driver/search_driver.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "builtin/builtin_proposer.hpp"
#include "builtin/row_family.hpp"
#include "driver/winner_record.hpp"
#include "key/row_key.hpp"
#include "plan/launch_plan.hpp"

namespace kd::search {
namespace {

// Times each candidate by a rule of its source; counts evaluations.
class ScriptedBackend final : public EvalBackend {
public:
  explicit ScriptedBackend(std::function<double(const std::string& source)> time_us)
      : time_us_(std::move(time_us)) {}
  eval::Verdict evaluate(const eval::EvalRequest& request) override {
    ++calls;
    EXPECT_FALSE(request.cubin.empty());
    EXPECT_FALSE(request.plan.launches.empty());
    eval::Verdict v;
    const double us = time_us_(request.key_line);
    v.rule = us < 100 ? eval::Rule::passed : eval::Rule::not_faster;
    v.candidate_time = eval::TimeStats{us, us, us, 20};
    v.baseline_time = eval::TimeStats{100, 100, 100, 20};
    return v;
  }
  double floor_us(const GemmKey&) override { return 5; }
  int calls = 0;

private:
  std::function<double(const std::string&)> time_us_;
};


const GemmKey kKey = std::get<GemmKey>(parse_key(
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1"));

CompileService& compiler() {
  static CompileService service;
  return service;
}

TEST(SearchDriver, DryRunProposesAndCompilesWithoutAGpu) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  SearchOptions opts;
  opts.mode = SearchMode::dry_run;
  const search::GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), nullptr, opts, {});
  ASSERT_GE(out.tree.nodes().size(), 4u);
  int round1 = 0;
  for (const Node& n : out.tree.nodes()) {
    EXPECT_EQ(n.compile_status, "ok") << n.idea << "\n" << n.compile_log;
    EXPECT_EQ(n.verdict, "not_evaluated");
    if (n.round == 1) {
      ++round1;
      EXPECT_GE(n.parent, 0);
    }
  }
  EXPECT_GT(round1, 0);
  EXPECT_NE(out.stop_reason.find("dry run"), std::string::npos);
}

TEST(SearchDriver, RoundsImproveThenStopWhenNothingImproves) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  SearchOptions opts;
  opts.budget.rounds = 6;
  opts.budget.ideas = 2;
  opts.budget.impls = 1;
  opts.budget.topk = 1;
  const search::GpuTarget target;
  // The backend cannot see sources; time by the order of evaluation instead: each round faster
  // until round 2, then flat.
  int evaluated = 0;
  ScriptedBackend timed([&](const std::string&) {
    ++evaluated;
    return evaluated <= 3 ? 50.0 : 40.0;
  });
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), &timed, opts, {});
  EXPECT_TRUE(out.winner.has_value());
  EXPECT_LT(out.tree.rounds().size(), 7u);
  EXPECT_NE(out.stop_reason.find("did not improve"), std::string::npos) << out.stop_reason;
  EXPECT_EQ(out.tree.node(*out.winner).verdict, "passed");
  EXPECT_EQ(out.builds.count(*out.winner), 1u);
}

TEST(SearchDriver, CandidateBudgetHolds) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  double t = 90;
  ScriptedBackend backend([&](const std::string&) { return t -= 1; });  // always improving
  SearchOptions opts;
  opts.budget.rounds = 20;
  opts.budget.max_candidates = 7;
  const search::GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), &backend, opts, {});
  EXPECT_LE(out.tree.nodes().size(), 7u);
  // Every node once, and the winner once more to confirm it.
  EXPECT_EQ(backend.calls, static_cast<int>(out.tree.nodes().size()) + 1);
  EXPECT_NE(out.stop_reason.find("candidate budget"), std::string::npos) << out.stop_reason;
}

// The fastest of many noisy measurements is biased low: the winner must win a second time. Here
// the fastest node's confirmation measures slower than the baseline, so it is not published and
// the next one, confirmed, is.
TEST(SearchDriver, WinnerIsPublishedOnlyWhenASecondMeasurementConfirmsIt) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  SearchOptions opts;
  opts.budget.max_candidates = 4;
  int calls = 0;
  ScriptedBackend backend([&](const std::string&) {
    ++calls;
    if (calls <= 4) return 60.0 - calls;  // node 3 fastest, then node 2
    return calls == 5 ? 150.0 : 58.0;     // node 3's confirmation loses, node 2's wins
  });
  const search::GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), &backend, opts, {});
  ASSERT_EQ(out.tree.nodes().size(), 4u);
  ASSERT_TRUE(out.winner.has_value());
  EXPECT_EQ(*out.winner, 2);
  EXPECT_EQ(out.tree.node(3).verdict, "not_faster");
  EXPECT_NE(out.tree.node(3).detail.find("did not confirm"), std::string::npos) << out.tree.node(3).detail;
  EXPECT_DOUBLE_EQ(out.tree.node(2).candidate_us, 58.0);  // the confirmation's time
  EXPECT_EQ(calls, 6);
}

TEST(SearchDriver, NoCorrectCandidateKeepsTheVendorLibrary) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  ScriptedBackend backend([](const std::string&) { return 500.0; });  // correct but slower
  SearchOptions opts;
  const search::GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), &backend, opts, {});
  EXPECT_FALSE(out.winner.has_value());
  EXPECT_TRUE(out.tree.best().has_value());
}

// A GEMM-only proposer: a row-operator search must never ask it.
class GemmOnlyProposer final : public Proposer {
public:
  std::string_view name() const override { return "gemm_only"; }
  std::vector<Proposal> seeds(const ProposalContext& ctx) override {
    EXPECT_EQ(ctx.row, nullptr) << "a GEMM-only proposer was asked for a row key";
    return {};
  }
  std::vector<Idea> ideas(const ProposalContext& ctx, const Node&, int) override {
    EXPECT_EQ(ctx.row, nullptr);
    return {};
  }
  std::vector<Proposal> implement(const ProposalContext& ctx, const Node&, const Idea&, int) override {
    EXPECT_EQ(ctx.row, nullptr);
    return {};
  }
};

// Issue 33: a row key asks only the proposers that serve row operators (builtin's row_reduce
// seeds, rendered for its op), and its tree and its gate requests go by the row key's full line.
const char kRowLine[] = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1 arch=sm_90 "
                        "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

SearchOptions small_row_search() {
  SearchOptions opts;
  opts.budget.rounds = 1;
  opts.budget.ideas = 1;
  opts.budget.impls = 1;
  opts.budget.topk = 1;
  opts.budget.max_candidates = 4;
  return opts;
}

TEST(SearchDriver, RowKeySeedsTheRowFamilyOnlyUnderItsOwnLine) {
  builtin::BuiltinProposer builtin;
  GemmOnlyProposer gemm_only;
  std::vector<Proposer*> proposers{&gemm_only, &builtin};
  const auto parsed = parse_op_key(kRowLine);
  const OpKey& key = std::get<OpKey>(parsed);
  ScriptedBackend timed([&](const std::string& line) {
    EXPECT_EQ(line, op_full_line(key)) << "the gate gets the row key's line";
    return 50.0;
  });
  const GpuTarget target;
  const SearchOutcome out = run_search(key, target, proposers, compiler(), &timed, small_row_search(), {});
  EXPECT_EQ(out.tree.key_line(), op_full_line(key));
  ASSERT_FALSE(out.tree.nodes().empty()) << out.stop_reason;
  for (const Node& n : out.tree.nodes()) {
    EXPECT_EQ(n.proposer, "builtin");
    EXPECT_EQ(n.family, builtin::kRowFamilyName) << n.idea;
    EXPECT_NE(n.source.find("#define KD_OP 1"), std::string::npos) << "layernorm is KD_OP 1";
  }
}

// The whole path to a record: row_reduce candidates compile, pass the compiled-kernel contract
// check for kd_row_args (64 bytes, not kd_gemm_args' 128), and the winner becomes a kernel record
// of the key's full line.
TEST(SearchDriver, RowKeyWinnerIsAKernelRecordOfItsFullLine) {
  builtin::BuiltinProposer builtin;
  std::vector<Proposer*> proposers{&builtin};
  const auto parsed = parse_op_key(kRowLine);
  const OpKey& key = std::get<OpKey>(parsed);
  const std::string full = op_full_line(key);
  int evaluated = 0;
  ScriptedBackend timed([&](const std::string&) { return 90.0 - ++evaluated; });
  const GpuTarget target;
  SearchOptions opts = small_row_search();
  opts.budget.max_candidates = 8;  // round 0's seeds (at most 6) and one move of round 1
  const SearchOutcome out = run_search(key, target, proposers, compiler(), &timed, opts, {});
  bool refined = false;
  for (const Node& n : out.tree.nodes()) {
    EXPECT_EQ(n.compile_status, "ok") << n.idea << "\n" << n.detail;
    refined = refined || n.round == 1;
  }
  EXPECT_TRUE(refined) << "round 1 applies a row move: " << out.stop_reason;
  ASSERT_TRUE(out.winner.has_value()) << out.stop_reason;
  const Record r = make_record(out, *out.winner, full, {"12.8", 12080, 0});
  EXPECT_EQ(r.kind, RecordKind::nvrtc_kernel);
  EXPECT_EQ(r.key_line, full);
  EXPECT_EQ(r.alignment_bytes, 16u);
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(r.plan.launches.empty());
  EXPECT_NE(r.source.find("row_reduce"), std::string::npos);
}

// The row family's moves each give a valid configuration that differs from the one moved.
TEST(SearchDriver, RowMovesGiveValidNewConfigurations) {
  const auto parsed = parse_op_key("rmsnorm dtype=bf16 rows=16 cols=4096 weight=1");
  const RowKey& key = std::get<RowKey>(std::get<OpKey>(parsed));
  const GpuTarget target;
  int moved = 0;
  for (const builtin::Params& raw : builtin::row_seeds(key, target)) {
    const builtin::Params seed = builtin::row_complete(key, target, raw);
    for (const builtin::RowMove& move : builtin::row_moves()) {
      const auto next = builtin::apply_row_move(move, key, target, seed);
      if (!next) continue;
      ++moved;
      EXPECT_TRUE(builtin::row_valid(key, target, *next)) << move.id;
      EXPECT_NE(*next, seed) << move.id;
    }
  }
  EXPECT_GT(moved, 4);
}

}  // namespace
}  // namespace kd::search
