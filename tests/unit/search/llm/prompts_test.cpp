#include "llm/prompts.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "key/row_key.hpp"
#include "llm/operator_context.hpp"
#include "llm/proposer_context.hpp"

namespace kd::llm {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(Prompts, EmbeddedCopiesMatchTheFiles) {
  const char* source_dir = std::getenv("KD_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "ctest sets KD_SOURCE_DIR";
  ASSERT_EQ(prompt_files().size(), 6u);
  for (const PromptFile& file : prompt_files()) {
    const auto path = std::filesystem::path(source_dir) / "search" / "prompts" / file.file_name;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(file.text, read_file(path))
        << file.file_name << " differs from its embedded copy: regenerate "
        << "search/src/llm/embedded_prompts.cpp from embedded_prompts.cpp.in";
    EXPECT_TRUE(std::string(file.file_name).starts_with(file.name));
  }
}

TEST(Prompts, RenderFillsPlaceholdersOnceAndVerbatim) {
  EXPECT_EQ(render_template("a {{x}} b {{y}}", {{"x", "{{y}}"}, {"y", "2"}}), "a {{y}} b 2");
}

TEST(Prompts, MissingPlaceholderThrowsNamingIt) {
  try {
    render_template("{{present}} {{absent}}", {{"present", "1"}});
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("{{absent}}"), std::string::npos);
  }
}

ProposerContext sample_context() {
  ProposerContext context;
  context.semantics = "SEMANTICS-TEXT";
  context.key_line = "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096";
  context.gpu = GpuDescription{"sm_90", 132, 3350.0, 989.5};
  context.contract = "CONTRACT-TEXT";
  context.roofline_floor_us = 12.5;
  context.tree.push_back(TreeEntry{"split-K by 4", "ok", 20.25, ""});
  context.tree.push_back(TreeEntry{"tiles 256x128", "compile_error", std::nullopt, "error: too big"});
  return context;
}

RowKey row_key(std::string_view line) {
  return std::get<RowKey>(std::get<OpKey>(parse_op_key(line)));
}

// A row key's context as the search adapter makes it, with the sample's GPU, roofline and tree.
ProposerContext sample_row_context(std::string_view line) {
  ProposerContext context = operator_context(row_key(line));
  const ProposerContext gemm = sample_context();
  context.gpu = gemm.gpu;
  context.roofline_floor_us = gemm.roofline_floor_us;
  context.tree = gemm.tree;
  return context;
}

// Every placeholder a step's caller adds to the shared ones.
PromptVars with_extras(PromptVars vars) {
  for (const char* extra : {"n", "b", "idea", "seed_source", "source", "compile_log"}) vars[extra] = "X";
  return vars;
}

TEST(Prompts, EveryPromptRendersFromTheContextAndItsExtras) {
  const ProposerContext gemm = sample_context();
  const ProposerContext row = sample_row_context("rmsnorm dtype=bf16 rows=16 cols=4096 weight=1");
  for (const PromptFile& file : prompt_files()) {
    const ProposerContext& context = file.op == PromptOperator::row ? row : gemm;
    const RenderedPrompt rendered = render_prompt(file.id, file.op, with_extras(context_vars(context)));
    EXPECT_EQ(rendered.name, file.name);
    EXPECT_FALSE(rendered.system.empty());
    EXPECT_EQ(rendered.system.find("<!--"), std::string::npos) << file.name;
    EXPECT_EQ(rendered.user.find("<!--"), std::string::npos) << file.name;
    EXPECT_EQ(rendered.user.find("{{"), std::string::npos) << file.name;
    EXPECT_NE(rendered.user.find(context.key_line), std::string::npos) << file.name;
    EXPECT_NE(rendered.user.find(context.contract), std::string::npos) << file.name;
    EXPECT_EQ(&prompt_file(file.id, file.op), &file);
  }
}

TEST(Prompts, IdeasPromptCarriesGpuRooflineAndTree) {
  PromptVars vars = context_vars(sample_context());
  vars["n"] = "5";
  const std::string user = render_prompt(PromptId::ideas, PromptOperator::gemm, vars).user;
  for (const char* expected : {"SEMANTICS-TEXT", "sm_90", "132", "3350 GB/s", "989.5 TFLOP/s",
                               "12.50 us", "1. [ok, 20.2 us] split-K by 4",
                               "2. [compile_error] tiles 256x128", "error: too big", "Propose 5"}) {
    EXPECT_NE(user.find(expected), std::string::npos) << expected << "\n" << user;
  }
}

// A candidate the gate rejected shows the gate's reason under its line; a correct one does not.
TEST(Prompts, TreeShowsWhyTheGateRejectedACandidate) {
  ProposerContext context = sample_context();
  context.tree = {TreeEntry{"single-pass variance", "wrong_result", std::nullopt, "",
                            "trial 5 (mean 1000, std 0.1): max_rel 84.4 (allowed 0.00272)"},
                  TreeEntry{"two-pass variance", "passed", 3.0, "", ""}};
  const std::string tree = render_tree(context);
  EXPECT_NE(tree.find("1. [wrong_result] single-pass variance\n   gate: trial 5 (mean 1000, std 0.1): max_rel 84.4"),
            std::string::npos)
      << tree;
  EXPECT_EQ(tree.find("gate:", tree.find("2. [passed")), std::string::npos) << tree;
}

TEST(Prompts, TreeKeepsTheNewestEntries) {
  ProposerContext context = sample_context();
  for (int i = 0; i < 10; ++i) context.tree.push_back(TreeEntry{"idea " + std::to_string(i), "ok", 1.0, ""});
  const std::string tree = render_tree(context, TreeLimits{3, 100, 100});
  EXPECT_NE(tree.find("9 older entries not shown"), std::string::npos);
  EXPECT_NE(tree.find("idea 9"), std::string::npos);
  EXPECT_EQ(tree.find("idea 6"), std::string::npos);
}

// Issue 33: each row operator's prompts describe its contract (kd_row_args in <kdispatch/rowop.cuh>),
// its math, its shape and the roofline, in every step, and never GEMM's.
struct RowCase {
  const char* line;
  std::vector<const char*> expected;  // besides what every row prompt says
};

TEST(Prompts, RowPromptsNameTheRowContractTheOperatorsMathAndTheShape) {
  const std::vector<RowCase> cases = {
      {"rmsnorm dtype=bf16 rows=16 cols=4096 weight=1",
       {"rsqrt(mean_c(x[r][c]^2) + eps) * weight[c]", "16 rows of 4096", "bf16", "__float2bfloat16_rn",
        "weight=1: args.weight points at cols elements"}},
      {"layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1",
       {"(x[r][c] - mean) * rsqrt(var + eps) * weight[c] + bias[c]", "biased", "16 rows of 4194304",
        "bias=1: args.bias points"}},
      {"softmax dtype=f32 rows=65536 cols=128",
       {"exp(x[r][c] - m) / sum_c' exp(x[r][c'] - m)", "m = max_c x[r][c]", "65536 rows of 128",
        "args.weight and args.bias are null"}},
  };
  for (const RowCase& c : cases) {
    const ProposerContext context = sample_row_context(c.line);
    EXPECT_EQ(context.op, PromptOperator::row);
    for (const PromptId id : {PromptId::ideas, PromptId::implement, PromptId::repair}) {
      const RenderedPrompt rendered = render_prompt(id, PromptOperator::row, with_extras(context_vars(context)));
      const std::string& user = rendered.user;
      EXPECT_TRUE(std::string(rendered.name).ends_with(".row.v1")) << rendered.name;
      EXPECT_NE(user.find(c.line), std::string::npos) << c.line << ": " << rendered.name;
      for (const char* expected : {"struct kd_row_args", "<kdispatch/rowop.cuh>", "KD_GRID_DEPENDENCY_WAIT"})
        EXPECT_NE(user.find(expected), std::string::npos) << expected << ": " << c.line << ": " << rendered.name;
      for (const char* expected : c.expected)
        EXPECT_NE(user.find(expected), std::string::npos) << expected << ": " << c.line << ": " << rendered.name;
      for (const char* gemm_only : {"kd_gemm_args", "cuBLAS", "TFLOP/s"})
        EXPECT_EQ((rendered.system + user).find(gemm_only), std::string::npos) << gemm_only << ": " << rendered.name;
    }
  }
}

TEST(Prompts, RowImplementPromptStatesTheGatesRulesAndTheRoofline) {
  ProposerContext context = sample_row_context("layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1");
  context.baseline_time_us = 8100.0;
  const std::string user = render_prompt(PromptId::implement, PromptOperator::row, with_extras(context_vars(context))).user;
  for (const char* expected :
       {"kdispatch:plan", "\"workspace\"", "\"pdl\":true", "before any global memory", "fp64 reference",
        "mean 1000 and std 0.1", "E[x^2] - E[x]^2", "poisoned with NaN", "guard bands", "checksummed",
        "rows * cols elements of y", "Deterministic", "16-byte boundaries", "3350 GB/s", "12.50 us",
        "570425344 bytes (544.00 MiB)", "the framework's own kernel", "8100.0 us", "PyTorch"}) {
    EXPECT_NE(user.find(expected), std::string::npos) << expected << "\n" << user;
  }
}

TEST(Prompts, RowAlignmentAndPointersFollowTheKey) {
  const std::string odd = context_vars(sample_row_context("layernorm dtype=f32 rows=64 cols=777 weight=0 bias=0")).at("row_alignment");
  EXPECT_NE(odd.find("rows do not"), std::string::npos) << odd;
  EXPECT_NE(odd.find("wider than 4 bytes"), std::string::npos) << odd;
  const std::string even = context_vars(sample_row_context("softmax dtype=f16 rows=2048 cols=128")).at("row_alignment");
  EXPECT_NE(even.find("and so does every row (256 bytes"), std::string::npos) << even;
  const std::string plain = sample_row_context("layernorm dtype=f32 rows=64 cols=777 weight=0 bias=0").semantics;
  EXPECT_NE(plain.find("weight=0: args.weight is null"), std::string::npos) << plain;
  EXPECT_NE(plain.find("bias=0: args.bias is null"), std::string::npos) << plain;
  const std::string half = sample_row_context("softmax dtype=f16 rows=2048 cols=128").semantics;
  EXPECT_NE(half.find("__half from <cuda_fp16.h>"), std::string::npos) << half;
}

// A GEMM key keeps GEMM's prompt files and contract; the tree's last line keeps its words.
TEST(Prompts, GemmKeysKeepTheGemmPrompts) {
  const GemmKey key = std::get<GemmKey>(parse_key(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1"));
  ProposerContext context = operator_context(key);
  EXPECT_EQ(context.op, PromptOperator::gemm);
  EXPECT_TRUE(context.operator_vars.empty());
  EXPECT_NE(context.contract.find("struct kd_gemm_args"), std::string::npos);
  EXPECT_NE(context.contract.find("KD_GRID_DEPENDENCY_WAIT"), std::string::npos);
  context.baseline_time_us = 7.0;
  context.tree.push_back(TreeEntry{"seed", "passed", 9.0, ""});
  EXPECT_NE(render_tree(context).find("\nThe vendor library takes 7.0 us for this call."), std::string::npos);
  for (const PromptId id : {PromptId::ideas, PromptId::implement, PromptId::repair}) {
    const RenderedPrompt rendered = render_prompt(id, PromptOperator::gemm, with_extras(context_vars(context)));
    EXPECT_FALSE(std::string(rendered.name).ends_with(".row.v1")) << rendered.name;
    EXPECT_EQ(rendered.user.find("kd_row_args"), std::string::npos) << rendered.name;
    EXPECT_NE(rendered.user.find("kd_gemm_args"), std::string::npos) << rendered.name;
  }
}

}  // namespace
}  // namespace kd::llm
