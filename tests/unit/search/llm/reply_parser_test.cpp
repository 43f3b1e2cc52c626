#include "llm/reply_parser.hpp"

#include <gtest/gtest.h>

#include "test_kernels.hpp"

namespace kd::llm {
namespace {

using test::fenced;
using test::good_kernel;

std::vector<KernelText> kernels_of(std::string_view text, FinishReason finish = FinishReason::stop) {
  auto parsed = extract_kernels(text, finish);
  EXPECT_TRUE(std::holds_alternative<std::vector<KernelText>>(parsed))
      << std::get<ParseFailure>(parsed).message;
  return std::holds_alternative<std::vector<KernelText>>(parsed)
             ? std::get<std::vector<KernelText>>(parsed)
             : std::vector<KernelText>{};
}

ParseFailure failure_of(std::string_view text, FinishReason finish = FinishReason::stop) {
  auto parsed = extract_kernels(text, finish);
  EXPECT_TRUE(std::holds_alternative<ParseFailure>(parsed));
  return std::holds_alternative<ParseFailure>(parsed) ? std::get<ParseFailure>(parsed)
                                                       : ParseFailure{ReplyFate::ok, ""};
}

TEST(CodeBlocks, FencesWithLanguagesAndIndentation) {
  const auto blocks = extract_code_blocks("intro\n```cuda\na();\n```\ntext\n  ~~~cpp title\nb();\n  ~~~\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].language, "cuda");
  EXPECT_EQ(blocks[0].code, "a();\n");
  EXPECT_EQ(blocks[1].language, "cpp");
  EXPECT_EQ(blocks[1].code, "b();\n");
  EXPECT_TRUE(blocks[1].closed);
}

TEST(CodeBlocks, UnclosedAndGluedFences) {
  const auto glued = extract_code_blocks("```\nint x;\n}```\n");
  ASSERT_EQ(glued.size(), 1u);
  EXPECT_EQ(glued[0].code, "int x;\n}\n");
  const auto open = extract_code_blocks("```cuda\nint x;\n");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_FALSE(open[0].closed);
}

TEST(Kernels, SeveralBlocksGiveSeveralCandidatesWithoutDuplicates) {
  const std::string text = "Here are two:\n" + fenced(good_kernel("kd_a")) + "and\n" +
                           fenced(good_kernel("kd_b"), "") + "again\n" + fenced(good_kernel("kd_a"));
  const auto kernels = kernels_of(text);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_NE(kernels[0].source.find("kd_a"), std::string::npos);
  EXPECT_NE(kernels[1].source.find("kd_b"), std::string::npos);
  EXPECT_TRUE(kernels[0].complete);
}

TEST(Kernels, NonKernelBlocksAreIgnored) {
  const std::string text = fenced("pip install x", "bash") + fenced("__syncthreads();", "python") +
                           fenced("{\"launches\":[]}", "json") + fenced(good_kernel());
  EXPECT_EQ(kernels_of(text).size(), 1u);
}

TEST(Kernels, ProseWithoutCodeIsNoCode) {
  const auto f = failure_of("I would tile the matrix in 128x128 blocks and use tensor cores.");
  EXPECT_EQ(f.fate, ReplyFate::no_code);
  EXPECT_NE(f.message.find("prose"), std::string::npos);
}

TEST(Kernels, FragmentsOnlyIsNoCodeWithTheBlockCount) {
  const auto f = failure_of(fenced("a += b;") + fenced("c += d;"));
  EXPECT_EQ(f.fate, ReplyFate::no_code);
  EXPECT_NE(f.message.find("2 code block"), std::string::npos);
}

TEST(Kernels, BareKernelWithoutFencesIsTakenWhole) {
  const auto kernels = kernels_of(good_kernel());
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].source, good_kernel());
}

TEST(Kernels, CutAtMaxTokensMarksTheOpenBlockIncomplete) {
  const std::string kernel = good_kernel();
  const std::string text = fenced(good_kernel("kd_a")) + "```cuda\n" + kernel.substr(0, 120);
  const auto kernels = kernels_of(text, FinishReason::length);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_TRUE(kernels[0].complete);
  EXPECT_FALSE(kernels[1].complete);
  // Without the cut, a missing closing fence is forgiven.
  EXPECT_TRUE(kernels_of("```cuda\n" + kernel, FinishReason::stop)[0].complete);
}

TEST(Kernels, CutBeforeAnyKernelIsTruncated) {
  EXPECT_EQ(failure_of("Let me think about tiling", FinishReason::length).fate, ReplyFate::truncated);
}

std::vector<std::string> ideas_of(std::string_view text, std::size_t n = 8,
                                  FinishReason finish = FinishReason::stop) {
  auto parsed = parse_ideas(text, finish, n);
  EXPECT_TRUE(std::holds_alternative<std::vector<std::string>>(parsed))
      << std::get<ParseFailure>(parsed).message;
  return std::holds_alternative<std::vector<std::string>>(parsed)
             ? std::get<std::vector<std::string>>(parsed)
             : std::vector<std::string>{};
}

TEST(Ideas, JsonArrayInAFenceOrBare) {
  EXPECT_EQ(ideas_of("Sure!\n```json\n[\"split-K by 4\", \"128x64 tiles\"]\n```\n"),
            (std::vector<std::string>{"split-K by 4", "128x64 tiles"}));
  EXPECT_EQ(ideas_of("[\"a\", \"b\"]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ideas_of(R"([{"title":"t1"},{"idea":"i2"}])"), (std::vector<std::string>{"t1", "i2"}));
}

TEST(Ideas, NumberedAndBulletedListsWithContinuations) {
  const auto ideas = ideas_of("Ideas:\n1. Use split-K\n   with 4 slices.\n2) Wider loads\n\n- TMA loads\n");
  EXPECT_EQ(ideas, (std::vector<std::string>{"Use split-K with 4 slices.", "Wider loads", "TMA loads"}));
}

TEST(Ideas, DuplicatesAreDroppedAndTheCountIsCapped) {
  EXPECT_EQ(ideas_of(R"(["Split-K by 4.", "split-k   by 4", "b", "c"])", 2),
            (std::vector<std::string>{"Split-K by 4.", "b"}));
}

TEST(Ideas, ArrayCutAtMaxTokensKeepsCompleteStrings) {
  EXPECT_EQ(ideas_of(R"(["first idea", "second \"quoted\" idea", "thi)", 8, FinishReason::length),
            (std::vector<std::string>{"first idea", "second \"quoted\" idea"}));
}

TEST(Ideas, UnparseableGivesAReason) {
  auto parsed = parse_ideas("I think the kernel is fine as is.", FinishReason::stop, 4);
  ASSERT_TRUE(std::holds_alternative<ParseFailure>(parsed));
  EXPECT_EQ(std::get<ParseFailure>(parsed).fate, ReplyFate::no_ideas);
  auto cut = parse_ideas("Let me consider", FinishReason::length, 4);
  ASSERT_TRUE(std::holds_alternative<ParseFailure>(cut));
  EXPECT_EQ(std::get<ParseFailure>(cut).fate, ReplyFate::truncated);
}

}  // namespace
}  // namespace kd::llm
