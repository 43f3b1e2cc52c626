#include "llm/llm_proposer.hpp"

#include <gtest/gtest.h>

#include "key/row_key.hpp"
#include "llm/operator_context.hpp"
#include "llm_test_fixture.hpp"
#include "test_kernels.hpp"

namespace kd::llm {
namespace {

using namespace std::chrono_literals;
using test::fenced;
using test::good_kernel;
using test::kTestKey;

class LlmProposerTest : public test::LlmTest {
protected:
  static ProposerContext context() {
    ProposerContext c;
    c.semantics = "cuBLAS GEMM, column-major";
    c.key_line = "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 "
                 "ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
    c.gpu = GpuDescription{"sm_90", 132, 3350.0, 989.0};
    c.contract = "struct kd_gemm_args { ... };";
    c.roofline_floor_us = 9.75;
    return c;
  }
  // A row key's context as the search adapter makes it (issue 33).
  static ProposerContext row_context(std::string_view line) {
    ProposerContext c = operator_context(std::get<RowKey>(std::get<OpKey>(parse_op_key(line))));
    c.gpu = GpuDescription{"sm_90", 132, 3350.0, 0.0};
    c.roofline_floor_us = 0.16;
    return c;
  }
  // The user message of the index-th request.
  std::string user_message(std::size_t index) const {
    const auto body = server_.requests().at(index).json();
    return GetParam() == ApiKind::openai_chat ? body["messages"][1]["content"].get<std::string>()
                                              : body["messages"][0]["content"].get<std::string>();
  }
  // One implement call for b kernels of an idea on good_kernel(), which the server answers with `body`.
  std::variant<Implementation, LlmFailure> implement_answered(std::string body, std::size_t b) {
    server_.push({200, std::move(body)});
    LlmProposer proposer(config(), nullptr);
    return proposer.implement("idea", good_kernel(), context(), b);
  }
};

TEST_P(LlmProposerTest, IdeasFromAJsonArray) {
  server_.push({200, reply("```json\n[\"split-K by 4\", \"Split-K by 4.\", \"64x16 tiles\"]\n```")});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.propose_ideas(context(), 3);
  ASSERT_TRUE(std::holds_alternative<IdeasReply>(result)) << std::get<LlmFailure>(result).message;
  const auto& ideas = std::get<IdeasReply>(result);
  EXPECT_EQ(ideas.ideas, (std::vector<std::string>{"split-K by 4", "64x16 tiles"}));
  EXPECT_EQ(ideas.record.prompt, "ideas.v1");
  EXPECT_EQ(ideas.record.usage.total(), 150);
  const std::string user = user_message(0);
  for (const char* expected : {"m=4096 n=16 k=4096", "sm_90", "132", "3350 GB/s", "989.0 TFLOP/s",
                               "9.75 us", "struct kd_gemm_args", "first round", "Propose 3"}) {
    EXPECT_NE(user.find(expected), std::string::npos) << expected;
  }
}

TEST_P(LlmProposerTest, ProseIdeasReplyIsNoIdeas) {
  server_.push({200, reply("The kernel looks optimal to me.")});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.propose_ideas(context(), 3);
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::no_ideas);
  EXPECT_EQ(std::get<LlmFailure>(result).charged.total(), 150);
}

TEST_P(LlmProposerTest, GoodKernelsBecomeCheckedCandidates) {
  server_.push({200, reply("Two variants:\n" + fenced(good_kernel("kd_a", 1)) + "and\n" +
                           fenced(good_kernel("kd_b", 2)) + fenced(good_kernel("kd_c", 3)))});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.implement("use 4 warps", good_kernel("kd_seed"), context(), 2);
  ASSERT_TRUE(std::holds_alternative<Implementation>(result)) << std::get<LlmFailure>(result).message;
  const auto& impl = std::get<Implementation>(result);
  EXPECT_EQ(impl.record.prompt, "implement.v1");
  ASSERT_EQ(impl.candidates.size(), 2u);  // b = 2: the third is dropped
  for (const auto& candidate : impl.candidates) {
    EXPECT_EQ(candidate.fate, ReplyFate::ok) << candidate.message;
    ASSERT_TRUE(candidate.plan);
    EXPECT_EQ(candidate.plan->launches.at(0).block[0], 256u);
  }
  const std::string user = user_message(0);
  EXPECT_NE(user.find("use 4 warps"), std::string::npos);
  EXPECT_NE(user.find("kd_seed"), std::string::npos);
  EXPECT_NE(user.find("Write 2 different"), std::string::npos);
}

TEST_P(LlmProposerTest, BrokenKernelsGetTheirStaticVerdicts) {
  auto result = implement_answered(
      reply(fenced(test::host_code_kernel()) + fenced(test::planless_kernel()) + fenced(good_kernel())), 4);
  ASSERT_TRUE(std::holds_alternative<Implementation>(result));
  const auto& c = std::get<Implementation>(result).candidates;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].fate, ReplyFate::static_check_failed);
  EXPECT_EQ(c[0].status, search::CandidateStatus::host_code);
  EXPECT_FALSE(c[0].message.empty());
  EXPECT_EQ(c[1].fate, ReplyFate::no_plan);
  EXPECT_EQ(c[1].status, search::CandidateStatus::no_plan);
  EXPECT_EQ(c[2].fate, ReplyFate::ok);
}

TEST_P(LlmProposerTest, ProseWithoutCodeIsNoCode) {
  auto result = implement_answered(reply("I would use tensor cores with a 128x16 tile."), 2);
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::no_code);
}

TEST_P(LlmProposerTest, ReplyCutAtMaxTokensMarksTheCutKernel) {
  const std::string kernel = good_kernel("kd_b");
  auto result = implement_answered(reply(fenced(good_kernel("kd_a")) + "```cuda\n" + kernel.substr(0, 150), true), 2);
  ASSERT_TRUE(std::holds_alternative<Implementation>(result));
  const auto& c = std::get<Implementation>(result).candidates;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].fate, ReplyFate::ok);
  EXPECT_EQ(c[1].fate, ReplyFate::truncated);
}

TEST_P(LlmProposerTest, RepairFeedsTheCompileLogBack) {
  server_.push({200, reply("Fixed:\n" + fenced(good_kernel("kd_fixed")))});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.repair("idea X", "BROKEN-SOURCE", "line 3: error: identifier \"foo\" is undefined",
                                context());
  ASSERT_TRUE(std::holds_alternative<Repaired>(result)) << std::get<LlmFailure>(result).message;
  const auto& repaired = std::get<Repaired>(result);
  EXPECT_EQ(repaired.record.prompt, "repair.v1");
  EXPECT_EQ(repaired.candidate.fate, ReplyFate::ok);
  EXPECT_NE(repaired.candidate.source.find("kd_fixed"), std::string::npos);
  const std::string user = user_message(0);
  EXPECT_NE(user.find("BROKEN-SOURCE"), std::string::npos);
  EXPECT_NE(user.find("identifier \"foo\" is undefined"), std::string::npos);
  EXPECT_NE(user.find("idea X"), std::string::npos);
}

TEST_P(LlmProposerTest, TreeRecordsEachReplysFateAndTheNextPromptShowsThem) {
  server_.push({200, reply(fenced(good_kernel()) + fenced(test::host_code_kernel()))});
  server_.push({200, reply("Only prose here.")});
  server_.push({429, "slow down", {{"Retry-After", "0"}}});
  server_.push({200, reply(fenced(test::planless_kernel()))});
  server_.push({200, reply("never seen"), {}, 1500ms});
  const std::string cut_json = reply("[\"a\"]");
  server_.push({200, cut_json.substr(0, cut_json.size() - 5)});
  server_.push({200, reply("[\"next idea\"]")});

  LlmConfig c = config();
  c.request_timeout = 400ms;
  auto budget = std::make_shared<TokenBudget>(1'000'000);
  LlmProposer proposer(c, budget);
  ProposerContext ctx = context();
  const auto record = [&ctx](std::string_view idea, const auto& result) {
    if (const auto* failure = std::get_if<LlmFailure>(&result)) {
      ctx.tree.push_back(tree_entry(idea, *failure));
      return;
    }
    for (const auto& candidate : std::get<Implementation>(result).candidates) {
      ctx.tree.push_back(tree_entry(idea, candidate));
    }
  };
  record("idea one", proposer.implement("idea one", good_kernel(), ctx, 2));
  record("idea two", proposer.implement("idea two", good_kernel(), ctx, 2));
  record("idea three", proposer.implement("idea three", good_kernel(), ctx, 2));  // 429 then ok
  record("idea four", proposer.implement("idea four", good_kernel(), ctx, 2));    // timeout
  record("idea five", proposer.implement("idea five", good_kernel(), ctx, 2));    // bad JSON

  std::vector<std::string> verdicts;
  for (const auto& entry : ctx.tree) verdicts.push_back(entry.verdict);
  EXPECT_EQ(verdicts, (std::vector<std::string>{"ok", "host_code", "no_code", "no_plan", "timeout",
                                                "bad_response"}));
  for (const auto& entry : ctx.tree) {
    EXPECT_EQ(entry.compile_error_excerpt.find(kTestKey), std::string::npos);
  }

  auto next = proposer.propose_ideas(ctx, 2);
  ASSERT_TRUE(std::holds_alternative<IdeasReply>(next));
  const std::string user = user_message(server_.requests().size() - 1);
  for (const char* expected : {"1. [ok] idea one", "2. [host_code] idea one", "3. [no_code] idea two",
                               "4. [no_plan] idea three", "5. [timeout] idea four",
                               "6. [bad_response] idea five"}) {
    EXPECT_NE(user.find(expected), std::string::npos) << expected << "\n" << user;
  }
  EXPECT_LE(budget->tokens_used(), budget->limit_tokens());
}

// Issue 33: a row key's steps render the row prompts (named in the reply's record) and a reply's
// row kernels pass the same static checks as GEMM's.
TEST_P(LlmProposerTest, RowKernelsBecomeCheckedCandidatesUnderTheRowPrompt) {
  const std::string line = "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1";
  server_.push({200, reply("One kernel:\n" + fenced(test::row_kernel(RowOp::rmsnorm, DType::bf16, "kd_rms", 16)))});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.implement("a block per row", test::row_kernel(RowOp::rmsnorm, DType::bf16, "kd_seed"),
                                   row_context(line), 2);
  ASSERT_TRUE(std::holds_alternative<Implementation>(result)) << std::get<LlmFailure>(result).message;
  const auto& impl = std::get<Implementation>(result);
  EXPECT_EQ(impl.record.prompt, "implement.row.v1");
  ASSERT_EQ(impl.candidates.size(), 1u);
  EXPECT_EQ(impl.candidates[0].fate, ReplyFate::ok) << impl.candidates[0].message;
  ASSERT_TRUE(impl.candidates[0].plan);
  EXPECT_EQ(impl.candidates[0].plan->launches.at(0).entry, "kd_rms");
  EXPECT_EQ(impl.candidates[0].plan->launches.at(0).grid[0], 16u);
  EXPECT_TRUE(impl.candidates[0].plan->launches.at(0).pdl);
  const std::string user = user_message(0);
  for (const char* expected : {line.c_str(), "struct kd_row_args", "rsqrt(mean_c(x[r][c]^2) + eps)", "kd_seed",
                               "a block per row", "Write 2 different"})
    EXPECT_NE(user.find(expected), std::string::npos) << expected;
  EXPECT_EQ(user.find("kd_gemm_args"), std::string::npos);
}

TEST_P(LlmProposerTest, RowIdeasAndRepairUseTheRowPrompts) {
  server_.push({200, reply(R"(["hold each row in registers and read x once"])")});
  server_.push({200, reply("Fixed:\n" + fenced(test::row_kernel(RowOp::softmax, DType::f32)))});
  LlmProposer proposer(config(), nullptr);
  const ProposerContext context = row_context("softmax dtype=f32 rows=65536 cols=128");
  auto ideas = proposer.propose_ideas(context, 1);
  ASSERT_TRUE(std::holds_alternative<IdeasReply>(ideas)) << std::get<LlmFailure>(ideas).message;
  EXPECT_EQ(std::get<IdeasReply>(ideas).record.prompt, "ideas.row.v1");
  auto repaired = proposer.repair("idea X", "BROKEN-SOURCE", "error: identifier \"foo\" is undefined", context);
  ASSERT_TRUE(std::holds_alternative<Repaired>(repaired)) << std::get<LlmFailure>(repaired).message;
  EXPECT_EQ(std::get<Repaired>(repaired).record.prompt, "repair.row.v1");
  EXPECT_EQ(std::get<Repaired>(repaired).candidate.fate, ReplyFate::ok) << std::get<Repaired>(repaired).candidate.message;
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string user = user_message(i);
    EXPECT_NE(user.find("exp(x[r][c] - m)"), std::string::npos) << i;
    EXPECT_NE(user.find("65536 rows of 128"), std::string::npos) << i;
    EXPECT_EQ(user.find("kd_gemm_args"), std::string::npos) << i;
  }
}

TEST_P(LlmProposerTest, RowProseReplyIsNoCode) {
  server_.push({200, reply("I would hold each row in registers, but here is no code.")});
  LlmProposer proposer(config(), nullptr);
  auto result = proposer.implement("idea", test::row_kernel(RowOp::layernorm, DType::f32),
                                   row_context("layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1"), 2);
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::no_code);
}

INSTANTIATE_TEST_SUITE_P(Apis, LlmProposerTest,
                         ::testing::Values(ApiKind::openai_chat, ApiKind::anthropic_messages),
                         test::api_name);

}  // namespace
}  // namespace kd::llm
