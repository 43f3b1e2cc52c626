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
  r.options.win_margin = 0.05;
  r.options.serving_min_replays = 7;
  r.options.serving_budget = std::chrono::milliseconds(90);
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
  v.candidate_error = {1.5e-3, 2.0e-4, -3.5e-7};
  v.vendor_error = {1e-6, 2e-7};
  v.trials.push_back({0, "normal", 1.0, 0.0, {1e-6, 1e-7}, {2e-6, 3e-7}, 4e-6, 6e-7});
  v.candidate_time = eval::TimeStats{10.5, 10.0, 11.0, 40};
  v.baseline_time = eval::TimeStats{12.0, 11.5, 12.5, 40};
  v.floor_us = 2.5;
  v.sm_clock_mhz = 1980;
  v.regime = eval::TimingRegime::serving;
  v.isolated_candidate_time = eval::TimeStats{14.0, 13.5, 14.5, 20};
  v.stream_us = 9.25;
  v.serving_calls = 20;
  v.serving_copies = 5;
  const VerdictMessage m =
      verdict_from_frame(decode_frame(encode_frame(verdict_frame(9, v, WorkerFate::exits))));
  EXPECT_EQ(m.id, 9u);
  EXPECT_EQ(m.fate, WorkerFate::exits);
  EXPECT_EQ(m.verdict.rule, v.rule);
  EXPECT_EQ(m.verdict.detail, v.detail);
  EXPECT_EQ(m.verdict.failed_trial, 3);
  EXPECT_DOUBLE_EQ(m.verdict.candidate_error.max_rel, 1.5e-3);
  EXPECT_DOUBLE_EQ(m.verdict.candidate_error.lean, -3.5e-7);
  ASSERT_EQ(m.verdict.trials.size(), 1u);
  EXPECT_DOUBLE_EQ(m.verdict.trials[0].allowed_norm_rel, 6e-7);
  ASSERT_TRUE(m.verdict.candidate_time.has_value());
  EXPECT_DOUBLE_EQ(m.verdict.candidate_time->spread_us(), 1.0);
  EXPECT_EQ(m.verdict.baseline_time->samples, 40);
  EXPECT_EQ(m.verdict.sm_clock_mhz, 1980);
  EXPECT_EQ(m.verdict.regime, eval::TimingRegime::serving);
  ASSERT_TRUE(m.verdict.isolated_candidate_time.has_value());
  EXPECT_DOUBLE_EQ(m.verdict.isolated_candidate_time->median_us, 14.0);
  EXPECT_FALSE(m.verdict.isolated_baseline_time.has_value());
  EXPECT_DOUBLE_EQ(m.verdict.stream_us, 9.25);
  EXPECT_EQ(m.verdict.serving_calls, 20);
  EXPECT_EQ(m.verdict.serving_copies, 5);
  EXPECT_FALSE(m.verdict.accepted());
}

// A verdict stored before the serving regime existed has no "regime": its times were isolated.
TEST(WorkerProtocol, VerdictWithoutRegimeReadsAsIsolated) {
  eval::Verdict v;
  v.rule = eval::Rule::passed;
  v.candidate_time = eval::TimeStats{10.5, 10.0, 11.0, 40};
  nlohmann::json j = eval::to_json(v);
  j.erase("regime");
  j["candidate_error"].erase("lean");  // nor a lean: it reads as 0
  EXPECT_EQ(eval::verdict_from_json(j).regime, eval::TimingRegime::isolated);
  EXPECT_EQ(eval::verdict_from_json(j).candidate_error.lean, 0.0);
}

TEST(WorkerProtocol, EveryRuleHasAUniqueNameThatParsesBack) {
  std::set<std::string> names;
  for (eval::Rule r : eval::all_rules()) {
    const std::string name(eval::to_string(r));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(eval::rule_from_string(name), r);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(eval::Rule::read_before_grid_wait) + 1);
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


// A cuBLASLt candidate travels as its 64 algorithm bytes (the blob), its workspace and version;
// no plan, no cubin.
TEST(WorkerProtocol, CublasLtEvaluateRequestRoundTrips) {
  eval::EvalRequest r = sample_request();
  r.cubin.clear();
  r.plan = {};
  std::string bytes(kCublasLtAlgoBytes, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 37);
  r.cublaslt = CublasLtAlgo{bytes, 4u << 20, 130100};
  const Frame f = evaluate_frame(5, r);
  EXPECT_FALSE(f.header.contains("plan"));
  EXPECT_EQ(f.blob, bytes);
  const eval::EvalRequest back = request_from_frame(decode_frame(encode_frame(f)));
  ASSERT_TRUE(back.cublaslt.has_value());
  EXPECT_EQ(*back.cublaslt, *r.cublaslt);
  EXPECT_TRUE(back.cubin.empty());
  EXPECT_TRUE(back.plan.launches.empty());
  EXPECT_EQ(back.options, r.options);
  // A kernel request stays a kernel request.
  EXPECT_FALSE(request_from_frame(evaluate_frame(6, sample_request())).cublaslt.has_value());
}

TEST(WorkerProtocol, CublasLtEvaluateRequestWithAWrongSizedAlgorithmIsMalformed) {
  eval::EvalRequest r = sample_request();
  r.cublaslt = CublasLtAlgo{std::string(kCublasLtAlgoBytes, 'x'), 0, 130100};
  Frame f = evaluate_frame(5, r);
  f.blob.pop_back();
  try {
    request_from_frame(f);
    ADD_FAILURE() << "a 63-byte algorithm was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("64 bytes"), std::string::npos) << e.what();
  }
  f = evaluate_frame(5, r);
  f.header["cublaslt"].erase("version");
  EXPECT_THROW(request_from_frame(f), Error);
}

cublaslt::Enumeration sample_enumeration() {
  cublaslt::Enumeration e;
  e.version = 130100;
  for (int i = 0; i < 3; ++i) {
    cublaslt::AlgoCandidate c;
    c.algo = {std::string(kCublasLtAlgoBytes, static_cast<char>(0xF0 + i)), static_cast<std::uint64_t>(i) << 22, e.version};
    c.description = "algo 21 tile 128x64 stages 64x3 split-K " + std::to_string(2 << i) + " (reduce compute_type)";
    c.origin = i == 0 ? "heuristic #1" : "split-K " + std::to_string(2 << i) + " of heuristic #1";
    c.waves = 0.5f * static_cast<float>(i + 1);
    e.algos.push_back(std::move(c));
  }
  return e;
}

TEST(WorkerProtocol, EnumerateRequestAndItsAlgorithmsRoundTrip) {
  EnumerateRequest req;
  req.key_line = sample_request().key_line;
  req.options.heuristics = 8;
  req.options.splits = {2, 3};
  req.options.max_candidates = 12;
  req.options.max_workspace_bytes = 1ull << 33;  // above 32 bits
  const EnumerateRequest back = enumerate_request_from_frame(decode_frame(encode_frame(enumerate_frame(3, req))));
  EXPECT_EQ(back.key_line, req.key_line);
  EXPECT_EQ(back.options, req.options);

  const cublaslt::Enumeration e = sample_enumeration();
  const AlgosMessage m = algos_from_frame(decode_frame(encode_frame(algos_frame(3, e, WorkerFate::continues))));
  EXPECT_EQ(m.id, 3u);
  EXPECT_EQ(m.fate, WorkerFate::continues);
  ASSERT_TRUE(std::holds_alternative<cublaslt::Enumeration>(m.result));
  EXPECT_EQ(std::get<cublaslt::Enumeration>(m.result), e);

  const AlgosMessage failed = algos_from_frame(
      decode_frame(encode_frame(algos_frame(4, std::string("no cuBLASLt: cannot load libcublasLt.so.13"), WorkerFate::exits))));
  EXPECT_EQ(failed.fate, WorkerFate::exits);
  ASSERT_TRUE(std::holds_alternative<std::string>(failed.result));
  EXPECT_NE(std::get<std::string>(failed.result).find("libcublasLt"), std::string::npos);
}

TEST(WorkerProtocol, MalformedEnumerationsAreRejected) {
  Frame f = algos_frame(1, sample_enumeration(), WorkerFate::continues);
  f.header["algos"][1]["algo"] = "abc";  // not 128 hex digits
  EXPECT_THROW(algos_from_frame(f), Error);
  f = algos_frame(1, sample_enumeration(), WorkerFate::continues);
  std::string hex = f.header["algos"][0]["algo"].get<std::string>();
  hex[7] = 'g';
  f.header["algos"][0]["algo"] = hex;
  EXPECT_THROW(algos_from_frame(f), Error);
  EXPECT_THROW(algos_from_frame(evaluate_frame(1, sample_request())), Error);  // not an algos frame

  Frame req = enumerate_frame(1, {sample_request().key_line, {}});
  req.header["options"]["heuristics"] = 0;
  EXPECT_THROW(enumerate_request_from_frame(req), Error);
  req = enumerate_frame(1, {sample_request().key_line, {}});
  req.header["options"]["splits"] = "2,4";
  EXPECT_THROW(enumerate_request_from_frame(req), Error);
  req = enumerate_frame(1, {sample_request().key_line, {}});
  req.header.erase("key");
  EXPECT_THROW(enumerate_request_from_frame(req), Error);
}

TEST(WorkerProtocol, AlgorithmHexRoundTripsEveryByteValue) {
  std::string bytes(kCublasLtAlgoBytes, '\0');
  for (int round = 0; round < 4; ++round) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(round * 64 + static_cast<int>(i));
    const std::string hex = algo_hex(bytes);
    EXPECT_EQ(hex.size(), 2 * kCublasLtAlgoBytes);
    EXPECT_EQ(algo_bytes_from_hex(hex), bytes);
  }
  EXPECT_FALSE(algo_bytes_from_hex(std::string(2 * kCublasLtAlgoBytes - 2, '0')).has_value());
}

}  // namespace
}  // namespace kd::worker
