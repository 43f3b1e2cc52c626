#include <gtest/gtest.h>

#include <set>

#include "common/error.hpp"
#include "worker/protocol.hpp"

namespace kd::worker {
namespace {

eval::EvalRequest sample_request() {
  eval::EvalRequest r;
  r.key_line = "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
               "ldc=4096 batch=1 epilogue=none beta0=1";
  r.cubin = std::string("\x7f" "ELF\0binary\0", 12);
  r.plan.launches.push_back({"kd_main", {128, 2, 1}, {256, 1, 1}, 1024});
  r.plan.launches.push_back({"kd_reduce", {16, 1, 1}, {128, 1, 1}, 0});
  r.plan.workspace_bytes = 1 << 20;
  r.options.trials = 7;
  r.options.timing = eval::Timing::skip;
  r.options.timing_budget = std::chrono::milliseconds(250);
  r.options.publish_margin = 0.05;
  r.options.seed = 0xFFFFFFFFFFFFFFF0ull;  // above int64: must survive JSON
  return r;
}

TEST(WorkerProtocol, EvaluateRequestRoundTrips) {
  const eval::EvalRequest r = sample_request();
  const eval::EvalRequest back = request_from_frame(decode_frame(encode_frame(evaluate_frame(42, r))));
  EXPECT_EQ(back.key_line, r.key_line);
  EXPECT_EQ(back.cubin, r.cubin);
  EXPECT_EQ(back.plan, r.plan);
  EXPECT_EQ(back.options, r.options);
}

TEST(WorkerProtocol, VerdictRoundTripsWithTimesTrialsAndFate) {
  eval::Verdict v;
  v.rule = eval::Rule::precision_below_class;
  v.detail = "error above 2x the vendor's";
  v.failed_trial = 3;
  v.candidate_error = {1.5e-3, 2.0e-4};
  v.vendor_error = {1e-6, 2e-7};
  v.trials.push_back({0, "normal", 1.0, 0.0, {1e-6, 1e-7}, {2e-6, 3e-7}, 4e-6, 6e-7});
  v.candidate_time = eval::TimeStats{10.5, 10.0, 11.0, 40};
  v.baseline_time = eval::TimeStats{12.0, 11.5, 12.5, 40};
  v.floor_us = 2.5;
  v.sm_clock_mhz = 1980;
  const VerdictMessage m =
      verdict_from_frame(decode_frame(encode_frame(verdict_frame(9, v, WorkerFate::exits))));
  EXPECT_EQ(m.id, 9u);
  EXPECT_EQ(m.fate, WorkerFate::exits);
  EXPECT_EQ(m.verdict.rule, v.rule);
  EXPECT_EQ(m.verdict.detail, v.detail);
  EXPECT_EQ(m.verdict.failed_trial, 3);
  EXPECT_DOUBLE_EQ(m.verdict.candidate_error.max_rel, 1.5e-3);
  ASSERT_EQ(m.verdict.trials.size(), 1u);
  EXPECT_DOUBLE_EQ(m.verdict.trials[0].allowed_norm_rel, 6e-7);
  ASSERT_TRUE(m.verdict.candidate_time.has_value());
  EXPECT_DOUBLE_EQ(m.verdict.candidate_time->spread_us(), 1.0);
  EXPECT_EQ(m.verdict.baseline_time->samples, 40);
  EXPECT_EQ(m.verdict.sm_clock_mhz, 1980);
  EXPECT_FALSE(m.verdict.accepted());
}

TEST(WorkerProtocol, EveryRuleHasAUniqueNameThatParsesBack) {
  std::set<std::string> names;
  for (eval::Rule r : eval::all_rules()) {
    const std::string name(eval::to_string(r));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(eval::rule_from_string(name), r);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(eval::Rule::internal_error) + 1);
  EXPECT_FALSE(eval::rule_from_string("cheated").has_value());
}

TEST(WorkerProtocol, RejectsUnknownRulesAndMalformedRequests) {
  nlohmann::json j = eval::to_json(eval::Verdict{});
  j["rule"] = "cheated";
  EXPECT_THROW(eval::verdict_from_json(j), Error);
  Frame f = evaluate_frame(1, sample_request());
  f.header.erase("key");
  EXPECT_THROW(request_from_frame(f), Error);
  f = evaluate_frame(1, sample_request());
  f.header["plan"]["launches"][0]["block"] = {2048, 1, 1};  // block product > 1024
  EXPECT_THROW(request_from_frame(f), Error);
  f = evaluate_frame(1, sample_request());
  f.header["options"]["timing"] = "sometimes";
  EXPECT_THROW(request_from_frame(f), Error);
  EXPECT_THROW(verdict_from_frame(f), Error);  // not a verdict frame
}

}  // namespace
}  // namespace kd::worker
