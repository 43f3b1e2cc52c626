// The llm proposer inside the branching search: a dry-run search (real NVRTC, no GPU) with the
// builtin proposer seeding and the llm proposer, served by the scripted local server, writing
// ideas, implementations and one repair. The tree must record every reply's fate.
#include <gtest/gtest.h>

#include <map>

#include "builtin/builtin_proposer.hpp"
#include "driver/search_driver.hpp"
#include "llm/search_adapter.hpp"
#include "llm_test_fixture.hpp"
#include "test_kernels.hpp"

namespace kd::llm::test {
namespace {

class LlmSearch : public LlmTest {};

TEST_P(LlmSearch, TreeRecordsEveryReplysFateAndTheRepairRound) {
  // The key the builtin proposer seeds: f32 N,N 777x333x555 (simt_tiled only).
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1"));
  // Dry run expands the first compiled seed once: 1 ideas request, then 1 implement request per
  // idea (2 ideas, b = 2), then 1 repair for the candidate that does not compile.
  server_.push({200, reply(R"(["use a 2x wider thread tile", "stage B through shared memory"])")});
  server_.push({200, reply(fenced(good_kernel("kd_main", 1)) + "\n" +
                          fenced("extern \"C\" __global__ void kd_main(kd_gemm_args a) { undeclared(); }\n"
                                 "// kdispatch:plan {\"launches\":[{\"entry\":\"kd_main\",\"grid\":[1,1,1],\"block\":[32,1,1],\"smem\":0}],\"workspace\":0}\n"
                                 "#include <kdispatch/gemm.cuh>\n"))});
  server_.push({200, reply("I would stage B through shared memory, but no code today.")});
  server_.push({200, reply(fenced(good_kernel("kd_main", 7)))});  // the repair

  auto budget = std::make_shared<TokenBudget>(100000);
  LlmSearchProposer llm(config(), budget);
  builtin::BuiltinProposer builtin;
  std::vector<search::Proposer*> proposers{&builtin, &llm};
  search::CompileService compiler;
  search::SearchOptions opts;
  opts.mode = search::SearchMode::dry_run;
  opts.budget.ideas = 2;
  opts.budget.impls = 2;
  const search::GpuTarget target;
  const search::SearchOutcome out = run_search(key, target, proposers, compiler, nullptr, opts, {});

  std::map<std::string, int> llm_fates;
  for (const search::Node& n : out.tree.nodes()) {
    if (n.proposer != "llm") continue;
    ++llm_fates[n.compile_status == "not_compiled" ? n.verdict : n.compile_status];
    EXPECT_EQ(n.round, 1);
    EXPECT_GE(n.parent, 0);
  }
  EXPECT_EQ(llm_fates["ok"], 2) << "the good kernel and the repaired one compile";
  EXPECT_EQ(llm_fates["compile_error"], 1) << "the broken kernel is kept with its log";
  EXPECT_EQ(llm_fates["no_code"], 1) << "prose without code is recorded as no_code";
  bool repaired = false;
  for (const search::Node& n : out.tree.nodes()) repaired |= n.idea.rfind("repair: ", 0) == 0;
  EXPECT_TRUE(repaired);

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The implement request carries the seed kernel and the idea; the repair carries the log.
  EXPECT_NE(requests[1].body.find("kd_simt_tiled"), std::string::npos);
  EXPECT_NE(requests[3].body.find("undeclared"), std::string::npos);
  EXPECT_GT(budget->prompt_tokens_used() + budget->completion_tokens_used(), 0);
  // The key is never stored in the tree.
  EXPECT_EQ(out.tree.to_json().dump().find(kTestKey), std::string::npos);
}

TEST_P(LlmSearch, ExhaustedBudgetSendsNothingAndTheSearchGoesOn) {
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=777 n=333 k=555 lda=777 ldb=555 ldc=777 batch=1 epilogue=none beta0=1"));
  LlmSearchProposer llm(config(), std::make_shared<TokenBudget>(10));
  builtin::BuiltinProposer builtin;
  std::vector<search::Proposer*> proposers{&builtin, &llm};
  search::CompileService compiler;
  search::SearchOptions opts;
  opts.mode = search::SearchMode::dry_run;
  const search::GpuTarget target;
  const search::SearchOutcome out = run_search(key, target, proposers, compiler, nullptr, opts, {});
  EXPECT_TRUE(server_.requests().empty());
  ASSERT_FALSE(llm.failures().empty());
  EXPECT_NE(llm.failures().front().find("budget_exhausted"), std::string::npos) << llm.failures().front();
  EXPECT_FALSE(out.tree.nodes().empty());
}

INSTANTIATE_TEST_SUITE_P(BothApis, LlmSearch,
                         ::testing::Values(ApiKind::openai_chat, ApiKind::anthropic_messages),
                         [](const auto& api) { return std::string(to_string(api.param)); });

}  // namespace
}  // namespace kd::llm::test
