// Grid rules of range plans (issue 29): the arithmetic, the JSON form in candidate plans and
// records, the range check at the ends, and the plan a launcher runs for one n.
#include "plan/grid_rule.hpp"

#include <gtest/gtest.h>

#include "plan/launch_plan.hpp"

namespace kd {
namespace {

TEST(GridRule, ComputesCeilDivAndTheCappedReduction) {
  const GridRule tiles{.offset = 127, .div = 128};
  EXPECT_EQ(tiles.at(1), 1);
  EXPECT_EQ(tiles.at(128), 1);
  EXPECT_EQ(tiles.at(129), 2);
  EXPECT_EQ(tiles.at(8192), 64);
  // clamp(ceil(batch * m * n / 256), 1, 8 * 132) with batch * m = 1000.
  const GridRule reduce{.scale = 1000, .offset = 255, .div = 256, .cap = 1056};
  EXPECT_EQ(reduce.at(1), 4);
  EXPECT_EQ(reduce.at(100), 391);
  EXPECT_EQ(reduce.at(4096), 1056);
  const GridRule affine{.div = 8, .mul = 3, .add = -2};
  EXPECT_EQ(affine.at(16), 4);
  EXPECT_EQ(affine.at(7), -2);
}

TEST(GridRule, OverflowIsNoValue) {
  const GridRule huge{.scale = UINT64_MAX, .div = 1, .mul = 2};
  EXPECT_FALSE(huge.at(1 << 20).has_value());
  const GridRule big_add{.div = 1, .add = INT64_MAX};
  EXPECT_FALSE(big_add.at(2).has_value());
  EXPECT_FALSE(GridRule{.div = 0}.at(1).has_value());
  EXPECT_FALSE(GridRule{}.at(0).has_value());
}

TEST(GridRule, JsonRoundTripsAndRejectsNonsense) {
  const GridRule r{.scale = 4, .offset = 255, .div = 256, .mul = 2, .add = -1, .cap = 1056};
  EXPECT_EQ(std::get<GridRule>(grid_rule_from_json(grid_rule_json(r))), r);
  EXPECT_EQ(grid_rule_json(GridRule{.offset = 63, .div = 64}).dump(), R"({"div":64,"offset":63})");
  const auto error = [](const char* text) {
    const auto parsed = grid_rule_from_json(nlohmann::json::parse(text));
    return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : std::string("parsed");
  };
  EXPECT_EQ(error(R"({"offset":1})"), "div: missing");
  EXPECT_EQ(error(R"({"div":0})"), "div: expected an integer >= 1, got 0");
  EXPECT_EQ(error(R"({"div":4,"scale":0})"), "scale: expected an integer >= 1, got 0");
  EXPECT_EQ(error(R"({"div":4,"mul":-1})"), "mul: expected an integer >= 0, got -1");
  EXPECT_EQ(error(R"({"div":4,"step":2})"), "unknown field \"step\"");
  EXPECT_EQ(error(R"({"div":1.5})"), "div: expected an integer >= 1, got 1.5");
  EXPECT_EQ(error(R"([1])"), "expected an object, got [1]");
}

constexpr std::string_view kRangePlan =
    R"({"launches":[{"entry":"kd_main","grid":[12,4,1],"grid_rule":[null,{"div":64,"offset":63},null],)"
    R"("block":[256,1,1],"smem":0}],"workspace":0})";

TEST(RangePlan, ParsesPrintsAndComputesOneN) {
  const auto parsed = parse_plan_json(kRangePlan);
  ASSERT_TRUE(std::holds_alternative<LaunchPlan>(parsed)) << std::get<PlanError>(parsed).message;
  const LaunchPlan plan = std::get<LaunchPlan>(parsed);
  EXPECT_TRUE(plan.has_rules());
  EXPECT_EQ(plan_to_json(plan), kRangePlan);
  EXPECT_FALSE(range_plan_problem(plan, 129, 256));
  const auto at = plan_at_n(plan, 130);
  ASSERT_TRUE(std::holds_alternative<LaunchPlan>(at));
  const LaunchPlan& p = std::get<LaunchPlan>(at);
  EXPECT_FALSE(p.has_rules());
  EXPECT_EQ(p.launches[0].grid, (std::array<std::uint32_t, 3>{12, 3, 1}));
}

TEST(RangePlan, ChecksTheEnds) {
  const LaunchPlan plan = std::get<LaunchPlan>(parse_plan_json(kRangePlan));
  EXPECT_EQ(range_plan_problem(plan, 129, 300), "plan: launches[0].grid_rule[1]: 5 at n=300, but grid[1] is 4");
  EXPECT_EQ(range_plan_problem(plan, 300, 129), "plan: range 300..129 is empty");
  LaunchPlan floor_rule = plan;
  floor_rule.launches[0].grid_rule[1] = GridRule{.div = 64};
  floor_rule.launches[0].grid[1] = 4;
  EXPECT_EQ(range_plan_problem(floor_rule, 1, 256), "plan: launches[0].grid_rule[1]: 0 at n=1 (at least 1)");
  LaunchPlan wide = plan;
  wide.launches[0].grid_rule[1] = GridRule{.div = 1};
  wide.launches[0].grid[1] = 65535;
  EXPECT_EQ(range_plan_problem(wide, 1, 70000),
            "plan: launches[0].grid_rule[1]: 70000 at n=70000 exceeds the maximum 65535");
  EXPECT_FALSE(range_plan_problem(LaunchPlan{}, 1, 5)) << "a plan without rules serves any n";
}

TEST(RangePlan, RejectsMalformedRuleLists) {
  const auto error = [](std::string_view rules) {
    const std::string text = R"({"launches":[{"entry":"kd_main","grid":[1,1,1],"grid_rule":)" + std::string(rules) +
                             R"(,"block":[32,1,1]}]})";
    const auto parsed = parse_plan_json(text);
    return std::holds_alternative<PlanError>(parsed) ? std::get<PlanError>(parsed).message : std::string("parsed");
  };
  EXPECT_EQ(error("[null,null,null]"), "plan: launches[0].grid_rule: no rule (leave the field out)");
  EXPECT_EQ(error("[null]"), "plan: launches[0].grid_rule: expected 3 entries (null or a rule), got [null]");
  EXPECT_EQ(error(R"([{"div":0},null,null])"), "plan: launches[0].grid_rule[0]: div: expected an integer >= 1, got 0");
}

}  // namespace
}  // namespace kd
