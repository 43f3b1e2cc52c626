#include "llm/prompts.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/error.hpp"
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
  ASSERT_EQ(prompt_files().size(), 3u);
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

TEST(Prompts, EveryPromptRendersFromTheContextAndItsExtras) {
  PromptVars vars = context_vars(sample_context());
  for (const char* extra : {"n", "b", "idea", "seed_source", "source", "compile_log"}) vars[extra] = "X";
  for (const PromptFile& file : prompt_files()) {
    const RenderedPrompt rendered = render_prompt(file.id, vars);
    EXPECT_EQ(rendered.name, file.name);
    EXPECT_FALSE(rendered.system.empty());
    EXPECT_EQ(rendered.system.find("<!--"), std::string::npos) << file.name;
    EXPECT_EQ(rendered.user.find("<!--"), std::string::npos) << file.name;
    EXPECT_EQ(rendered.user.find("{{"), std::string::npos) << file.name;
    EXPECT_NE(rendered.user.find("gemm a=bf16"), std::string::npos) << file.name;
    EXPECT_NE(rendered.user.find("CONTRACT-TEXT"), std::string::npos) << file.name;
  }
}

TEST(Prompts, IdeasPromptCarriesGpuRooflineAndTree) {
  PromptVars vars = context_vars(sample_context());
  vars["n"] = "5";
  const std::string user = render_prompt(PromptId::ideas, vars).user;
  for (const char* expected : {"SEMANTICS-TEXT", "sm_90", "132", "3350 GB/s", "989.5 TFLOP/s",
                               "12.50 us", "1. [ok, 20.2 us] split-K by 4",
                               "2. [compile_error] tiles 256x128", "error: too big", "Propose 5"}) {
    EXPECT_NE(user.find(expected), std::string::npos) << expected << "\n" << user;
  }
}

TEST(Prompts, TreeKeepsTheNewestEntries) {
  ProposerContext context = sample_context();
  for (int i = 0; i < 10; ++i) context.tree.push_back(TreeEntry{"idea " + std::to_string(i), "ok", 1.0, ""});
  const std::string tree = render_tree(context, TreeLimits{3, 100, 100});
  EXPECT_NE(tree.find("9 older entries not shown"), std::string::npos);
  EXPECT_NE(tree.find("idea 9"), std::string::npos);
  EXPECT_EQ(tree.find("idea 6"), std::string::npos);
}

}  // namespace
}  // namespace kd::llm
