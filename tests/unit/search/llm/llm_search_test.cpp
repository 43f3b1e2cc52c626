// The llm proposer inside the branching search: a dry-run search (real NVRTC, no GPU) with the
// builtin proposer seeding and the llm proposer, served by the scripted local server, writing
// ideas, implementations and one repair, for a GEMM key and for a row-operator key (issue 33). The
// tree must record every reply's fate.
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

// Issue 33: a row-operator search asks the llm proposer too. Its prompts are the row ones, shown a
// builtin row_reduce seed; its row kernels compile and pass the compiled-kernel check for
// kd_row_args (64 bytes); a kernel taking kd_gemm_args is refused by that check and repaired; a reply
// without code is recorded as no_code and the round goes on.
TEST_P(LlmSearch, RowSearchAsksTheModelWithTheRowPromptsAndChecksItsKernelsAsRowKernels) {
  const OpKey key = std::get<OpKey>(parse_op_key("layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1"));
  const std::string gemm_struct_kernel =
      "#include <kdispatch/gemm.cuh>\n"
      "// kdispatch:plan {\"launches\":[{\"entry\":\"kd_wrong_struct\",\"grid\":[64,1,1],\"block\":[256,1,1],\"smem\":0}],\"workspace\":0}\n"
      "extern \"C\" __global__ void kd_wrong_struct(kd_gemm_args a) { static_cast<float*>(a.c)[threadIdx.x] = 0.f; }\n";
  server_.push({200, reply(R"(["hold each row in registers and read x once", "two rows per block"])")});
  server_.push({200, reply(fenced(row_kernel(RowOp::layernorm, DType::f32, "kd_row_a")) + fenced(gemm_struct_kernel))});
  server_.push({200, reply("Two rows per block would help; I will write it next time.")});
  server_.push({200, reply(fenced(row_kernel(RowOp::layernorm, DType::f32, "kd_row_fixed", 512)))});  // the repair

  LlmSearchProposer llm(config(), std::make_shared<TokenBudget>(100000));
  EXPECT_TRUE(llm.serves_row_operators());
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
  int builtin_round1 = 0;
  for (const search::Node& n : out.tree.nodes()) {
    if (n.proposer != "llm") {
      builtin_round1 += n.round == 1 ? 1 : 0;
      continue;
    }
    ++llm_fates[n.compile_status == "not_compiled" ? n.verdict : n.compile_status];
    EXPECT_EQ(n.round, 1);
    EXPECT_GE(n.parent, 0);
    EXPECT_EQ(out.tree.node(n.parent).family, "row_reduce") << "llm nodes refine a builtin row_reduce seed";
    if (n.compile_status == "bad_entry_signature") {
      EXPECT_NE(n.detail.find("kd_row_args"), std::string::npos) << n.detail;
    }
  }
  EXPECT_EQ(llm_fates["ok"], 2) << "the row kernel and the repaired one compile as row kernels";
  EXPECT_EQ(llm_fates["bad_entry_signature"], 1) << "a kernel taking kd_gemm_args is not a row kernel";
  EXPECT_EQ(llm_fates["no_code"], 1) << "prose without code is recorded as no_code";
  EXPECT_GT(builtin_round1, 0) << "the builtin proposer's row moves run beside the model's";
  EXPECT_EQ(out.stop_reason, "dry run: proposals compiled, nothing evaluated");

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NE(requests[i].body.find("struct kd_row_args"), std::string::npos) << i;
    EXPECT_NE(requests[i].body.find("layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1"), std::string::npos) << i;
    EXPECT_EQ(requests[i].body.find("kd_gemm_args"), std::string::npos) << i;
  }
  // The implement request shows the builtin seed; the repair carries the check's message.
  EXPECT_NE(requests[1].body.find("KD_ROW_THREADS"), std::string::npos);
  EXPECT_NE(requests[3].body.find("kd_wrong_struct"), std::string::npos);
  EXPECT_NE(requests[3].body.find("kd_row_args"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(BothApis, LlmSearch,
                         ::testing::Values(ApiKind::openai_chat, ApiKind::anthropic_messages),
                         [](const auto& api) { return std::string(to_string(api.param)); });

// The model's view of a row search (ProposalContext::row set, `key` an empty GemmKey): the row
// key's line, contract and prompts, the roofline and the framework's time as the baseline.
TEST(LlmSearchContext, RowSearchContextDescribesTheRowKey) {
  const RowKey row = std::get<RowKey>(std::get<OpKey>(parse_op_key("softmax dtype=f32 rows=65536 cols=128")));
  const GemmKey none{};
  const search::GpuTarget target;
  const search::SearchTree tree("id", row.shape_line());
  const search::ProposalContext ctx{none, target, tree, 21.5, 24.85, 3100.0, 0.0, nullptr, &row};
  const ProposerContext c = LlmSearchProposer::context_for(ctx);
  EXPECT_EQ(c.op, PromptOperator::row);
  EXPECT_EQ(c.key_line, row.shape_line());
  EXPECT_NE(c.contract.find("struct kd_row_args"), std::string::npos);
  EXPECT_EQ(c.contract.find("kd_gemm_args"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.roofline_floor_us, 21.5);
  ASSERT_TRUE(c.baseline_time_us);
  EXPECT_DOUBLE_EQ(*c.baseline_time_us, 24.85);
  EXPECT_EQ(c.operator_vars.at("rows"), "65536");
  EXPECT_EQ(c.operator_vars.at("min_bytes"), "67108864 bytes (64.00 MiB)");
}

}  // namespace
}  // namespace kd::llm::test
