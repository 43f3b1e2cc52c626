// The proposer table (search/src/driver/proposer_table.hpp): the --proposer selection's parsing
// and the one place proposers are built, by name, from the settings kdispatchd and kdctl share.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "driver/proposer_table.hpp"

namespace kd::search {
namespace {

TEST(ProposerList, ParsesACommaListInOrder) {
  auto got = parse_proposer_list("builtin,cublaslt");
  ASSERT_TRUE(std::holds_alternative<std::vector<ProposerName>>(got)) << std::get<std::string>(got);
  EXPECT_EQ(std::get<std::vector<ProposerName>>(got), (std::vector{ProposerName::builtin, ProposerName::cublaslt}));
  got = parse_proposer_list(" cublaslt , llm,builtin ");
  ASSERT_TRUE(std::holds_alternative<std::vector<ProposerName>>(got));
  EXPECT_EQ(std::get<std::vector<ProposerName>>(got),
            (std::vector{ProposerName::cublaslt, ProposerName::llm, ProposerName::builtin}));
  EXPECT_EQ(to_string(ProposerName::cublaslt), "cublaslt");
}

TEST(ProposerList, ErrorsNameTheProblem) {
  const auto error = [](std::string_view text) {
    auto got = parse_proposer_list(text);
    return std::holds_alternative<std::string>(got) ? std::get<std::string>(got) : std::string("(accepted)");
  };
  EXPECT_NE(error("").find("no proposer"), std::string::npos);
  EXPECT_NE(error("builtin,").find("empty proposer name"), std::string::npos);
  const std::string unknown = error("builtin,cublas");
  EXPECT_NE(unknown.find("unknown proposer 'cublas'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("builtin, llm, cublaslt"), std::string::npos) << unknown;
  EXPECT_NE(error("cublaslt,builtin,cublaslt").find("given twice"), std::string::npos);
}

TEST(ProposerTable, BuildsEveryRowByItsName) {
  ProposerSettings settings;
  settings.llm_model = "some-model";
  for (const ProposerInfo& info : proposer_table()) {
    const ProposerName name[] = {info.name};
    auto made = make_proposers(name, settings);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::unique_ptr<Proposer>>>(made)) << std::get<std::string>(made);
    const auto& built = std::get<std::vector<std::unique_ptr<Proposer>>>(made);
    ASSERT_EQ(built.size(), 1u);
    EXPECT_EQ(built[0]->name(), info.text) << "the row builds the proposer it names";
  }
}

TEST(ProposerTable, AMisconfiguredProposerIsAnErrorNamingItsSetting) {
  const ProposerName names[] = {ProposerName::builtin, ProposerName::llm};
  auto made = make_proposers(names, ProposerSettings{});
  ASSERT_TRUE(std::holds_alternative<std::string>(made));
  const std::string& why = std::get<std::string>(made);
  EXPECT_EQ(why.rfind("proposer llm: ", 0), 0u) << why;
  EXPECT_NE(why.find("KD_LLM_MODEL"), std::string::npos) << why;

  ProposerSettings bad_api;
  bad_api.llm_model = "m";
  bad_api.llm_api = "grpc";
  made = make_proposers(names, bad_api);
  ASSERT_TRUE(std::holds_alternative<std::string>(made));
  EXPECT_NE(std::get<std::string>(made).find("'grpc'"), std::string::npos) << std::get<std::string>(made);
}

TEST(ProposerTable, AnUnknownBuiltinFamilyIsAnErrorListingTheFamilies) {
  const ProposerName names[] = {ProposerName::builtin};
  ProposerSettings settings;
  settings.builtin_families = {"wg_tma_f16s", "wg_tma_f16"};
  auto made = make_proposers(names, settings);
  ASSERT_TRUE(std::holds_alternative<std::string>(made));
  const std::string& why = std::get<std::string>(made);
  EXPECT_NE(why.find("'wg_tma_f16'"), std::string::npos) << why;
  EXPECT_NE(why.find("wg_tiled"), std::string::npos) << "the message lists the families: " << why;
  settings.builtin_families = {"wg_tma_f16s"};
  made = make_proposers(names, settings);
  ASSERT_TRUE(std::holds_alternative<std::vector<std::unique_ptr<Proposer>>>(made)) << std::get<std::string>(made);
}

}  // namespace
}  // namespace kd::search
