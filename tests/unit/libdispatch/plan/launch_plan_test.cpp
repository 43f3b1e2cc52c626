#include "plan/launch_plan.hpp"

#include <gtest/gtest.h>

#include <string>

namespace kd {
namespace {

constexpr std::string_view kDesignExample =
    R"({"launches":[{"entry":"kd_main","grid":[128,1,1],"block":[256,1,1],"smem":0}],"workspace":0})";

LaunchPlan expect_plan(const std::variant<LaunchPlan, PlanError>& parsed) {
  if (const auto* e = std::get_if<PlanError>(&parsed)) {
    ADD_FAILURE() << "unexpected error: " << e->message;
    return {};
  }
  return std::get<LaunchPlan>(parsed);
}

std::string expect_error(const std::variant<LaunchPlan, PlanError>& parsed) {
  if (std::holds_alternative<LaunchPlan>(parsed)) {
    ADD_FAILURE() << "expected an error, got a plan";
    return {};
  }
  return std::get<PlanError>(parsed).message;
}

TEST(LaunchPlan, ParsesTheDesignExample) {
  const LaunchPlan plan = expect_plan(parse_plan_json(kDesignExample));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].entry, "kd_main");
  EXPECT_EQ(plan.launches[0].grid, (std::array<std::uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(plan.launches[0].block, (std::array<std::uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(plan.launches[0].smem_bytes, 0u);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

TEST(LaunchPlan, PrintsCanonicalJsonThatParsesBack) {
  LaunchPlan plan;
  plan.launches.push_back({"kd_split", {64, 2, 4}, {128, 2, 1}, 100 * 1024});
  plan.launches.push_back({"kd_reduce", {16, 1, 1}, {256, 1, 1}, 0});
  plan.workspace_bytes = std::uint64_t{3} << 30;
  const std::string text = plan_to_json(plan);
  EXPECT_EQ(text.rfind(R"({"launches":[{"entry":"kd_split","grid":[64,2,4],"block":[128,2,1],)", 0), 0u)
      << text;
  EXPECT_EQ(expect_plan(parse_plan_json(text)), plan);
  EXPECT_EQ(plan_to_json(expect_plan(parse_plan_json(kDesignExample))), kDesignExample);
}

// "pdl" is printed only where set, so the text of every plan without it is unchanged.
TEST(LaunchPlan, ProgrammaticDependentLaunchRoundTrips) {
  constexpr std::string_view kTwo =
      R"({"launches":[{"entry":"kd_main","grid":[8,1,4],"block":[384,1,1],"smem":0},)"
      R"({"entry":"kd_reduce","grid":[64,1,1],"block":[256,1,1],"smem":0,"pdl":true}],"workspace":1024})";
  const LaunchPlan plan = expect_plan(parse_plan_json(kTwo));
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_FALSE(plan.launches[0].pdl);
  EXPECT_TRUE(plan.launches[1].pdl);
  EXPECT_EQ(plan_to_json(plan), kTwo);
  const LaunchPlan off = expect_plan(parse_plan_json(
      R"({"launches":[{"entry":"a","grid":[1,1,1],"block":[32,1,1]},{"entry":"b","grid":[1,1,1],"block":[32,1,1],"pdl":false}]})"));
  EXPECT_FALSE(off.launches[1].pdl);
  EXPECT_EQ(plan_to_json(off).find("pdl"), std::string::npos);
}

TEST(LaunchPlan, SmemAndWorkspaceDefaultToZero) {
  const LaunchPlan plan =
      expect_plan(parse_plan_json(R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1]}]})"));
  EXPECT_EQ(plan.launches.at(0).smem_bytes, 0u);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

TEST(LaunchPlan, FindsALineCommentInSource) {
  const std::string source = std::string("#include <kdispatch/gemm.cuh>\n// kdispatch:plan ") +
                             std::string(kDesignExample) +
                             "\nextern \"C\" __global__ void kd_main(kd_gemm_args a) {}\n";
  EXPECT_EQ(expect_plan(parse_plan_from_source(source)).launches.at(0).entry, "kd_main");
}

TEST(LaunchPlan, FindsABlockCommentSpanningLines) {
  const std::string source =
      "/* kdispatch:plan {\"launches\":[{\"entry\":\"a\",\"grid\":[2,1,1],\n"
      "     \"block\":[64,1,1],\"smem\":1024}],\n  \"workspace\":4096} */\n"
      "extern \"C\" __global__ void a(kd_gemm_args args) {}\n";
  const LaunchPlan plan = expect_plan(parse_plan_from_source(source));
  EXPECT_EQ(plan.launches.at(0).smem_bytes, 1024u);
  EXPECT_EQ(plan.workspace_bytes, 4096u);
}

TEST(LaunchPlan, MentionsOutsideACommentOpeningAreNotPlans) {
  const std::string source = std::string("// the kdispatch:plan below drives the launch\n") +
                             "//kdispatch:plan " + std::string(kDesignExample) + "\n";
  EXPECT_EQ(expect_plan(parse_plan_from_source(source)).launches.size(), 1u);
}

TEST(LaunchPlan, SourceErrorsNameTheProblem) {
  EXPECT_EQ(expect_error(parse_plan_from_source("__global__ void k() {}")),
            "plan: no `// kdispatch:plan {...}` comment in the source");
  const std::string twice = "// kdispatch:plan " + std::string(kDesignExample) + "\n\n" +
                            "/* kdispatch:plan " + std::string(kDesignExample) + " */\n";
  EXPECT_EQ(expect_error(parse_plan_from_source(twice)),
            "plan: 2 `kdispatch:plan` comments (lines 1 and 3); expected one");
  EXPECT_EQ(expect_error(parse_plan_from_source("\n/* kdispatch:plan {\"launches\":[]}\n")),
            "plan: the /* comment opened on line 2 is not closed");
  EXPECT_EQ(expect_error(parse_plan_from_source(
                "\n\n// kdispatch:plan {\"launches\":[{\"entry\":\"k\",\"grid\":[0,1,1],\"block\":[1,1,1]}]}\n")),
            "plan: line 3: launches[0].grid: expected 3 integers >= 1, got [0,1,1]");
}

struct BadPlan {
  const char* json;
  const char* message;
};

class LaunchPlanRejects : public testing::TestWithParam<BadPlan> {};

TEST_P(LaunchPlanRejects, WithAPreciseMessage) {
  EXPECT_EQ(expect_error(parse_plan_json(GetParam().json)), GetParam().message);
}

constexpr const char* kOk = R"("entry":"k","grid":[1,1,1],"block":[32,1,1])";

INSTANTIATE_TEST_SUITE_P(
    Cases, LaunchPlanRejects,
    testing::Values(
        BadPlan{"[1,2]", "plan: expected a JSON object, got [1,2]"},
        BadPlan{"{}", "plan: launches: missing"},
        BadPlan{R"({"launches":[]})", "plan: launches: expected an array of 1 to 8 launches, got 0 entries"},
        BadPlan{R"({"launches":{}})", "plan: launches: expected an array of 1 to 8 launches, got {}"},
        BadPlan{R"({"launches":[1]})", "plan: launches[0]: expected an object, got 1"},
        BadPlan{R"({"launches":[{"grid":[1,1,1],"block":[1,1,1]}]})", "plan: launches[0].entry: missing"},
        BadPlan{R"({"launches":[{"entry":"9k","grid":[1,1,1],"block":[1,1,1]}]})",
                R"(plan: launches[0].entry: expected a C identifier string, got "9k")"},
        BadPlan{R"({"launches":[{"entry":"k","block":[1,1,1]}]})", "plan: launches[0].grid: missing"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1],"block":[1,1,1]}]})",
                "plan: launches[0].grid: expected 3 integers >= 1, got [1,1]"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1.5,1,1],"block":[1,1,1]}]})",
                "plan: launches[0].grid: expected 3 integers >= 1, got [1.5,1,1]"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,-1,1],"block":[1,1,1]}]})",
                "plan: launches[0].grid: expected 3 integers >= 1, got [1,-1,1]"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,70000,1],"block":[1,1,1]}]})",
                "plan: launches[0].grid[1]: 70000 exceeds the maximum 65535"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[64,32,1]}]})",
                "plan: launches[0].block: 2048 threads per block exceeds the maximum 1024"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[1,1,128]}]})",
                "plan: launches[0].block[2]: 128 exceeds the maximum 64"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1],"smem":232449}]})",
                "plan: launches[0].smem: 232449 exceeds the maximum 232448"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1],"smem":"0"}]})",
                R"(plan: launches[0].smem: expected an integer >= 0, got "0")"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1],"smem_bytes":0}]})",
                R"(plan: launches[0]: unknown field "smem_bytes")"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1]}],"workspace":4294967297})",
                "plan: workspace: 4294967297 exceeds the maximum 4294967296"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1]},)"
                R"({"entry":"r","grid":[1,1,1],"block":[32,1,1],"pdl":1}]})",
                "plan: launches[1].pdl: expected true or false, got 1"},
        BadPlan{R"({"launches":[{"entry":"k","grid":[1,1,1],"block":[32,1,1]}],"extra":1})",
                R"(plan: unknown field "extra")"}));

TEST(LaunchPlan, RejectsMoreThanEightLaunches) {
  std::string json = R"({"launches":[)";
  for (int i = 0; i < 9; ++i) json += std::string(i ? "," : "") + "{" + kOk + "}";
  json += "]}";
  EXPECT_EQ(expect_error(parse_plan_json(json)),
            "plan: launches: expected an array of 1 to 8 launches, got 9 entries");
  EXPECT_EQ(expect_plan(parse_plan_json(json.replace(json.rfind(",{"), std::string::npos, "]}")))
                .launches.size(),
            8u);
}

TEST(LaunchPlan, InvalidJsonSaysSo) {
  const std::string message = expect_error(parse_plan_json(R"({"launches":[)"));
  EXPECT_EQ(message.rfind("plan: invalid JSON: ", 0), 0u) << message;
}

}  // namespace
}  // namespace kd
