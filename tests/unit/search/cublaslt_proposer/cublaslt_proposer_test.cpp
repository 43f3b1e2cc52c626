// The cublaslt proposer and its place in the search, without a GPU: proposer selection parsing,
// the proposer against a scripted algorithm source, a search that evaluates every algorithm
// through the backend (as the worker's gate would) and publishes the fastest as a cublaslt_algo
// record with its algorithm bytes and cuBLASLt version.
#include <gtest/gtest.h>

#include <map>

#include "cublaslt_proposer/cublaslt_proposer.hpp"
#include "driver/search_driver.hpp"
#include "driver/winner_record.hpp"
#include "store/record.hpp"

namespace kd::search {
namespace {

const GemmKey kKey = std::get<GemmKey>(parse_key(
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H200\" sms=132"));

cublaslt::AlgoCandidate algo(int i, std::uint64_t workspace_bytes = 0) {
  cublaslt::AlgoCandidate c;
  c.algo = {std::string(kCublasLtAlgoBytes, static_cast<char>(i)), workspace_bytes, 130100};
  c.description = "algo " + std::to_string(20 + i) + " tile 128x64 stages 64x3";
  c.origin = "heuristic #" + std::to_string(i);
  return c;
}

// Answers enumerations from a script and times algorithms by their first byte.
class ScriptedGpu final : public EvalBackend, public AlgoSource {
public:
  std::variant<cublaslt::Enumeration, std::string> answer;
  std::map<char, double> time_us;  // by first algorithm byte; 100 us is the baseline
  int evaluations = 0, enumerations = 0;

  std::variant<cublaslt::Enumeration, std::string> cublaslt_algos(const GemmKey& key,
                                                                 const cublaslt::EnumerationOptions&) override {
    ++enumerations;
    EXPECT_EQ(key, kKey);
    return answer;
  }
  AlgoSource* algo_source() override { return this; }
  eval::Verdict evaluate(const eval::EvalRequest& r) override {
    ++evaluations;
    EXPECT_TRUE(r.cubin.empty()) << "a cuBLASLt candidate carries no cubin";
    eval::Verdict v;
    if (!r.cublaslt) {
      ADD_FAILURE() << "a kernel request from the cublaslt proposer";
      return v;
    }
    const double us = time_us.at(r.cublaslt->bytes.at(0));
    v.rule = us < 97 ? eval::Rule::passed : eval::Rule::not_faster;
    v.candidate_time = eval::TimeStats{us, us, us, 20};
    v.baseline_time = eval::TimeStats{100, 100, 100, 20};
    v.sm_clock_mhz = 1980;
    return v;
  }
  double floor_us(const GemmKey&) override { return 5; }
};

CompileService& compiler() {
  static CompileService service;
  return service;
}

ProposalContext context(const GemmKey& key, const SearchTree& tree, AlgoSource* algos) {
  static const GpuTarget target;
  return {key, target, tree, 0, 0, 0, 0, algos};
}

TEST(CublasLtProposer, ProposesEveryEnumeratedAlgorithmOnceInRoundZeroOnly) {
  ScriptedGpu gpu;
  gpu.answer = cublaslt::Enumeration{130100, {algo(1), algo(2, 1 << 20)}};
  cublaslt::CublasLtProposer proposer;
  const SearchTree tree("t", kKey.full_line());
  const std::vector<Proposal> seeds = proposer.seeds(context(kKey, tree, &gpu));
  ASSERT_EQ(seeds.size(), 2u);
  for (const Proposal& p : seeds) {
    EXPECT_EQ(p.proposer, "cublaslt");
    EXPECT_TRUE(p.source.empty());
    EXPECT_TRUE(p.fate.empty());
    ASSERT_TRUE(p.cublaslt.has_value());
  }
  EXPECT_EQ(seeds[1].cublaslt->workspace_bytes, 1u << 20);
  EXPECT_NE(seeds[1].idea.find("heuristic #2"), std::string::npos) << seeds[1].idea;
  EXPECT_NE(seeds[1].idea.find("algo 22 tile 128x64"), std::string::npos) << seeds[1].idea;
  EXPECT_TRUE(proposer.ideas(context(kKey, tree, &gpu), Node{}, 3).empty());
}

TEST(CublasLtProposer, SaysWhyWhenItHasNothingToPropose) {
  cublaslt::CublasLtProposer proposer;
  const SearchTree tree("t", kKey.full_line());
  const auto only_fate = [&](const GemmKey& key, AlgoSource* algos) {
    const std::vector<Proposal> s = proposer.seeds(context(key, tree, algos));
    EXPECT_EQ(s.size(), 1u);
    return s.empty() ? Proposal{} : s.front();
  };
  const Proposal dry = only_fate(kKey, nullptr);
  EXPECT_EQ(dry.fate, "needs_gpu");
  EXPECT_NE(dry.fate_detail.find("needs a GPU"), std::string::npos) << dry.fate_detail;

  ScriptedGpu gpu;
  gpu.answer = std::string("cuBLASLt enumeration: crashed: the worker died during the request: signal 11");
  const Proposal failed = only_fate(kKey, &gpu);
  EXPECT_EQ(failed.fate, "enumeration_failed");
  EXPECT_NE(failed.fate_detail.find("signal 11"), std::string::npos);

  gpu.answer = cublaslt::Enumeration{130100, {}};
  EXPECT_EQ(only_fate(kKey, &gpu).fate, "no_algorithm");

  GemmKey bias = kKey;
  bias.epilogue = Epilogue::bias;
  const Proposal refused = only_fate(bias, &gpu);
  EXPECT_EQ(refused.fate, "not_proposed");
  EXPECT_NE(refused.fate_detail.find("bias"), std::string::npos);
  EXPECT_EQ(gpu.enumerations, 2) << "a bias key must not be enumerated";
}

TEST(CublasLtSearch, EveryAlgorithmGetsAVerdictAndTheFastestIsPublishedAsACublasLtRecord) {
  ScriptedGpu gpu;
  // Algorithm 3 twice (the same bytes from two origins): evaluated once.
  gpu.answer = cublaslt::Enumeration{130100, {algo(1), algo(2, 3 << 20), algo(3), algo(3)}};
  gpu.time_us = {{1, 99.0}, {2, 80.0}, {3, 90.0}};
  cublaslt::CublasLtProposer proposer;
  std::vector<Proposer*> proposers{&proposer};
  const GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), &gpu, {}, {});

  ASSERT_EQ(out.tree.nodes().size(), 3u);
  EXPECT_EQ(gpu.evaluations, 4);  // each algorithm once, and the winner again to confirm it
  for (const Node& n : out.tree.nodes()) {
    EXPECT_NE(n.verdict, "not_evaluated") << n.idea;
    EXPECT_EQ(n.compile_status, "not_compiled");
    ASSERT_TRUE(n.cublaslt.has_value());
    EXPECT_EQ(n.source_hash, algo_hash(*n.cublaslt));
  }
  ASSERT_TRUE(out.winner.has_value());
  const Node& w = out.tree.node(*out.winner);
  EXPECT_EQ(w.cublaslt->bytes.at(0), 2);
  EXPECT_DOUBLE_EQ(w.candidate_us, 80.0);
  EXPECT_NE(out.stop_reason.find("no proposer has a new idea"), std::string::npos) << out.stop_reason;
  EXPECT_TRUE(out.builds.empty()) << "cuBLASLt nodes have no build";

  // The tree keeps the algorithm through JSON.
  const SearchTree back = SearchTree::from_json(nlohmann::json::parse(out.tree.to_json().dump()));
  EXPECT_EQ(back.nodes(), out.tree.nodes());

  const Record r = make_record(out, *out.winner, kKey.full_line(), {"13.0", 13000, 0});
  EXPECT_EQ(r.kind, RecordKind::cublaslt_algo);
  EXPECT_EQ(r.cublaslt_algo, std::string(kCublasLtAlgoBytes, '\x02'));
  EXPECT_EQ(r.cublas_version, 130100) << "the version the worker enumerated with, not the caller's";
  EXPECT_EQ(r.plan.workspace_bytes, 3u << 20);
  EXPECT_TRUE(r.plan.launches.empty());
  EXPECT_EQ(r.alignment_bytes, kCublasLtAlignmentBytes);
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_EQ(r.proposer, "cublaslt");
  EXPECT_EQ(r.idea, w.idea);
  EXPECT_EQ(r.sm_clock_mhz, 1980);
  const auto decoded = deserialize_record(serialize_record(r));
  ASSERT_TRUE(std::holds_alternative<Record>(decoded));
  EXPECT_EQ(std::get<Record>(decoded), r);

  // kdctl verify re-evaluates it as the same algorithm.
  const eval::EvalRequest again = evaluation_request(r);
  ASSERT_TRUE(again.cublaslt.has_value());
  EXPECT_EQ(*again.cublaslt, *w.cublaslt);
  EXPECT_TRUE(again.cubin.empty());
}

TEST(CublasLtProposer, IdeaTextNamesTheConfigurationInCublasLtTerms) {
  AlgoConfig c;
  c.id = 55;
  c.tile = 13;    // CUBLASLT_MATMUL_TILE_64x32
  c.stages = 31;  // CUBLASLT_MATMUL_STAGES_8x3
  c.splitk = 8;
  c.reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  c.custom = 1;
  EXPECT_EQ(describe(c), "algo 55 tile 64x32 stages 8x3 split-K 8 (reduce compute_type) custom 1");
  c.splitk = 1;
  c.custom = 0;
  c.tile = 100000;  // newer than the table
  EXPECT_EQ(describe(c), "algo 55 tile #100000 stages 8x3");
  EXPECT_EQ(tile_shape_name(0), "auto");
  EXPECT_EQ(tile_shape_name(18), "128x64");

  cublaslt::AlgoCandidate a = algo(3, 2 << 20);
  a.origin = "split-K 8 of heuristic #3";
  a.waves = 0.17f;
  EXPECT_EQ(cublaslt::idea_text(a), "cuBLASLt split-K 8 of heuristic #3: algo 23 tile 128x64 stages 64x3 (waves 0.17) "
                                    "workspace 2048 KiB");
}

TEST(CublasLtSearch, ADryRunRecordsWhyNoAlgorithmWasProposed) {
  cublaslt::CublasLtProposer proposer;
  std::vector<Proposer*> proposers{&proposer};
  SearchOptions opts;
  opts.mode = SearchMode::dry_run;
  const GpuTarget target;
  const SearchOutcome out = run_search(kKey, target, proposers, compiler(), nullptr, opts, {});
  ASSERT_EQ(out.tree.nodes().size(), 1u);
  EXPECT_EQ(out.tree.node(0).verdict, "needs_gpu");
  EXPECT_FALSE(out.winner.has_value());
}

}  // namespace
}  // namespace kd::search
