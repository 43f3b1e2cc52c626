// The daemon protocol: frame codec and message codec, including every way input can be wrong.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "protocol/requests.hpp"
#include "support/temp_dir.hpp"

namespace kd::protocol {
namespace {

std::string payload_of(FrameDecoder::Next n) {
  auto* s = std::get_if<std::string>(&n);
  return s ? *s : std::string("<no payload>");
}

TEST(Frame, HeaderIsBigEndianLength) {
  const std::string f = encode_frame("abc");
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f.substr(0, 4), std::string("\0\0\0\3", 4));
  EXPECT_EQ(f.substr(4), "abc");
}

TEST(Frame, DecoderReassemblesFramesSplitAcrossReads) {
  const std::string stream = encode_frame("first") + encode_frame("") + encode_frame("third");
  FrameDecoder d;
  std::vector<std::string> got;
  for (char c : stream) {  // one byte at a time: every split point
    d.feed(std::string_view(&c, 1));
    for (auto n = d.next(); std::holds_alternative<std::string>(n); n = d.next())
      got.push_back(std::get<std::string>(n));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"first", "", "third"}));
  EXPECT_TRUE(std::holds_alternative<FrameDecoder::NeedMore>(d.finish()));
}

TEST(Frame, TruncatedStreamIsReportedAtFinish) {
  const std::string f = encode_frame("hello");
  FrameDecoder d;
  d.feed(std::string_view(f).substr(0, 6));
  EXPECT_TRUE(std::holds_alternative<FrameDecoder::NeedMore>(d.next()));
  auto end = d.finish();
  ASSERT_TRUE(std::holds_alternative<FrameError>(end));
  EXPECT_EQ(std::get<FrameError>(end), FrameError::truncated);
}

TEST(Frame, OversizedLengthIsAnErrorAndSticks) {
  FrameDecoder d;
  const std::uint32_t n = kMaxFramePayloadBytes + 1;
  const char header[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  d.feed(std::string_view(header, 4));
  auto r = d.next();
  ASSERT_TRUE(std::holds_alternative<FrameError>(r));
  EXPECT_EQ(std::get<FrameError>(r), FrameError::oversized);
  d.feed(encode_frame("ok"));
  EXPECT_TRUE(std::holds_alternative<FrameError>(d.next())) << "decoder resynchronised after garbage";
}

TEST(Frame, EncodingAnOversizedPayloadThrows) {
  EXPECT_THROW(encode_frame(std::string(kMaxFramePayloadBytes + 1, 'x')), Error);
  EXPECT_NO_THROW(encode_frame(std::string(kMaxFramePayloadBytes, 'x')));
}

// A message through the whole codec: encoded as a frame, split from the stream, decoded by type.
template <class M>
M round_trip(const M& m) {
  FrameDecoder d;
  d.feed(encode(m));
  auto decoded = decode_as<M>(payload_of(d.next()));
  if (auto* err = std::get_if<ProtocolError>(&decoded)) ADD_FAILURE() << err->message << " in " << to_payload(m);
  return std::get_if<M>(&decoded) != nullptr ? std::get<M>(decoded) : M{};
}
template <class M>
void expect_round_trip(const M& m) {
  EXPECT_EQ(round_trip(m), m) << to_payload(m);
}
template <class... Ms>
void expect_round_trips(const Ms&... m) {
  (expect_round_trip(m), ...);
}

ClientStats sample_stats() {
  ClientStats c;
  c.pid = 4321;
  c.program = "python3";
  c.instance = "0123456789abcdef";
  c.hits = 10;
  c.misses = 3;
  c.fallbacks = {{"no_entry", 2}, {"not_loaded", 1}, {"misaligned", 4}};
  c.loads = 2;
  c.swaps = 1;
  return c;
}

TEST(Messages, WhatLibkdispatchSpeaksRoundTrips) {
  ClientStats last = sample_stats();
  last.final = true;
  expect_round_trips(Hello{42, "libkdispatch"}, Miss{{{"gemm a=f32 m=1", 3}}, 0, false},
                     Miss{{{"gemm a=f32 m=1", 3}, {"gemm a=f32 m=2", 1}}, 9, true}, Subscribe{}, sample_stats(), last,
                     Usage{{"gemm a=f32 m=1", "gemm a=f32 m=2"}},
                     HelloOk{1, "0.1.0", 7, {"client_stats", "usage"}}, Subscribed{7},
                     Published{"gemm a=bf16", 17, std::nullopt}, Published{"", 18, 64}, ErrorMessage{"nope"});
}

TEST(Messages, EveryRequestAndReplyRoundTrips) {
  JobEntry job{"gemm a=f32 m=1", "running", 4, 2.5, 1, "", "round 1 of 3"};
  JobEntry unknown{"gemm a=f32 m=9", "unknown", {}, {}, {}, {}, {}};
  ClientCounters counters{10, 3, {{"no_entry", 3}}, 3, 13, 1, 0};
  Status status;
  status.daemon = "0.1.0";
  status.pid = 77;
  status.cache_dir = "/c";
  status.jobs = {1, 2, 3, 4, 5};
  status.running = {"gemm a=f32 m=1"};
  status.client_totals = counters;
  status.bounds = Bounds{4096, 1024, 1, 100, 2, 604800, 3, 0, true};
  status.remote = RemoteStatus{"redis://h:1/0", true, "", "verify", "this machine's GPU", "fleet", "me", 30000,
                               1, 2, 3, 4, RemoteCounts{{{"imports", 5}}, {{"bad_magic", 1}}, {}}};
  status.top_jobs = std::vector<JobEntry>{job};
  status.top_jobs_omitted = 3;
  Stats stats{{{"frames_received", 9}}, {{"contract", 2}}, 4, 5,
              ClientsReport{1, 2, 1, 0, counters, {LiveClient{12, "python3", "abc", 1, 2, counters}}}};
  expect_round_trips(Prewarm{{"gemm a=f32 m=1"}, "builtin,cublaslt", {1, 2, 3, 4}}, Prewarm{{"k"}, "", {}},
                     PrewarmOk{1, {{"k", "why"}}}, StatusQuery{20}, status, Status{}, JobsQuery{{"a", "b"}},
                     JobsReply{{job, unknown}, std::nullopt}, CacheChanged{{"k"}, 4}, CacheChangedOk{5, 4, 2},
                     StatsQuery{}, stats, Stats{}, ZeroStats{}, StatsZeroed{}, Cancel{"k"}, CancelOk{false, "bad key"},
                     Purge{{"done", "failed"}, 3600, true}, PurgeOk{{1, 2, 3}, 6, false}, Shutdown{}, ShutdownOk{},
                     MissAck{2, {{"k", "why"}}});
}

// The forms on the wire stay those PROTOCOL.md documents (and older daemons read).
TEST(Messages, WireFormsAreTheDocumentedOnes) {
  EXPECT_EQ(to_payload(Subscribe{}), R"({"type":"subscribe","v":1})");
  EXPECT_EQ(to_payload(Miss{{{"k", 3}}, 0, false}), R"({"count":3,"key":"k","type":"miss","v":1})");
  EXPECT_EQ(to_payload(Miss{{{"k", 1}, {"j", 2}}, 5, true}),
            R"({"ack":true,"hits":5,"keys":[{"count":1,"key":"k"},{"count":2,"key":"j"}],"type":"miss","v":1})");
  EXPECT_EQ(to_payload(Prewarm{{"k"}, "", {0, 2, 0, 0}}),
            R"({"budgets":{"candidates":2},"keys":["k"],"type":"prewarm","v":1})");
  EXPECT_EQ(to_payload(Published{"", 3, 8}), R"({"evicted":8,"generation":3,"key":"","type":"published","v":1})");
  // A miss's count defaults to 1, in both forms.
  const auto single = decode_as<Miss>(R"({"v":1,"type":"miss","key":"k"})");
  ASSERT_TRUE(std::holds_alternative<Miss>(single));
  EXPECT_EQ(std::get<Miss>(single).keys, (std::vector<MissEntry>{{"k", 1}}));
  const auto batch = decode_as<Miss>(R"({"v":1,"type":"miss","keys":[{"key":"k"}]})");
  ASSERT_TRUE(std::holds_alternative<Miss>(batch));
  EXPECT_EQ(std::get<Miss>(batch).keys, (std::vector<MissEntry>{{"k", 1}}));
}

template <class M>
void expect_error(std::string_view payload, std::string_view mentions) {
  auto r = decode_as<M>(payload);
  ASSERT_TRUE(std::holds_alternative<ProtocolError>(r)) << payload;
  EXPECT_NE(std::get<ProtocolError>(r).message.find(mentions), std::string::npos)
      << std::get<ProtocolError>(r).message;
}

TEST(Messages, RequestsOutsideTheirBoundsAreRejectedNamingTheField) {
  Usage big;
  big.keys.assign(kMaxUsageKeys + 1, "gemm a=f32 m=1");
  expect_error<Usage>(to_payload(big), "at most 2048");
  expect_error<Usage>(R"({"v":1,"type":"usage","keys":[1]})", "'keys'");
  expect_error<Usage>(R"({"v":1,"type":"usage"})", "'keys' is missing");
  JobsQuery many;
  many.keys.assign(kMaxJobsPerRequest + 1, "k");
  expect_error<JobsQuery>(to_payload(many), "at most 500");
  expect_error<Miss>(R"({"v":1,"type":"miss","keys":"k"})", "'keys'");
  expect_error<Miss>(R"({"v":1,"type":"miss","keys":["k"]})", "{key, count}");
  expect_error<Miss>(R"({"v":1,"type":"miss","keys":[{"key":"k","count":-1}]})", "'count'");
  expect_error<Miss>(R"({"v":1,"type":"miss","key":"k","ack":1})", "'ack'");
  expect_error<Miss>(R"({"v":1,"type":"miss","key":"k","hits":1.5})", "'hits'");
  expect_error<Prewarm>(R"({"v":1,"type":"prewarm","keys":[1]})", "array of key lines");
  expect_error<Prewarm>(R"({"v":1,"type":"prewarm","keys":[],"budgets":[]})", "'budgets'");
  expect_error<Prewarm>(R"({"v":1,"type":"prewarm","keys":[],"budgets":{"rounds":"3"}})", "'rounds'");
  expect_error<StatusQuery>(R"({"v":1,"type":"status","jobs":true})", "'jobs'");
  expect_error<CacheChanged>(R"({"v":1,"type":"cache_changed","keys":{}})", "'keys'");
  expect_error<Cancel>(R"({"v":1,"type":"cancel"})", "'key'");
  expect_error<Purge>(R"({"v":1,"type":"purge","states":"done"})", "job states");
  expect_error<Purge>(R"({"v":1,"type":"purge","dry_run":"yes"})", "'dry_run'");
  expect_error<Hello>(R"({"v":1,"type":"hello","pid":-1,"client":"x"})", "'pid'");
  expect_error<Hello>(R"({"v":1,"type":"hello","pid":18446744073709551615,"client":"x"})", "'pid'");
  // A map's entry of the wrong type is named.
  expect_error<Stats>(
      R"({"v":1,"type":"stats","counters":{"hits":1,"misses":"2"},"candidates_rejected":{},"generation":0,)"
      R"("transactions_committed":0})",
      "'counters' must be an object of name -> non-negative integer ('misses' is not a non-negative integer)");
}

TEST(Messages, ClientStatsOutsideTheLimitsIsRejected) {
  const auto with = [](auto change) {
    ClientStats c = sample_stats();
    change(c);
    return client_stats_problem(c);
  };
  EXPECT_FALSE(with([](ClientStats&) {}).has_value());
  EXPECT_NE(with([](ClientStats& c) { c.instance = ""; })->find("'instance'"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) { c.instance = "a b"; })->find("'instance'"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) { c.instance = std::string(65, 'a'); })->find("'instance'"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) { c.program = std::string(257, 'p'); })->find("'program'"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) { c.program = "evil\n\x1b[2J"; })->find("printable"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) { c.fallbacks["No Entry"] = 1; })->find("No Entry"), std::string::npos);
  EXPECT_NE(with([](ClientStats& c) {
              for (int i = 0; i < 65; ++i) c.fallbacks["r" + std::to_string(i)] = 1;
            })->find("more than 64"),
            std::string::npos);
  expect_error<ClientStats>(R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":1,"misses":0})",
                            "'fallbacks'");
  expect_error<ClientStats>(
      R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":-1,"misses":0,"fallbacks":{}})",
      "'hits'");
  expect_error<ClientStats>(
      R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":1,"misses":0,"fallbacks":{"no_entry":"3"}})",
      "no_entry");
  expect_error<ClientStats>(
      R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i!","hits":1,"misses":0,"fallbacks":{}})",
      "'instance'");
  expect_error<ClientStats>(
      R"({"v":1,"type":"client_stats","pid":4294967296,"program":"p","instance":"i","hits":1,"misses":0,"fallbacks":{}})",
      "not a process id");
  expect_error<HelloOk>(R"({"v":1,"type":"hello_ok","version":1,"generation":0,"features":"client_stats"})",
                        "'features'");
}

TEST(Messages, AnOlderDaemonsHelloOkHasNoFeatures) {
  // The client then sends no client_stats.
  auto old = decode_daemon_message(R"({"v":1,"type":"hello_ok","version":1,"generation":0})");
  ASSERT_TRUE(std::holds_alternative<DaemonMessage>(old));
  EXPECT_TRUE(std::get<HelloOk>(std::get<DaemonMessage>(old)).features.empty());
}

TEST(Messages, RejectsBadInput) {
  expect_error<Published>("{not json", "bad JSON");
  expect_error<Published>("[1,2]", "not a JSON object");
  expect_error<Subscribe>(R"({"type":"subscribe"})", "version");
  expect_error<Subscribe>(R"({"v":2,"type":"subscribe"})", "version 2");
  expect_error<Subscribe>(R"({"v":1,"type":"launch"})", "unknown message type");
  expect_error<Subscribe>(R"({"v":1})", "'type'");
  expect_error<Published>(R"({"v":1,"type":"published","key":"k"})", "'generation'");
  expect_error<Published>(R"({"v":1,"type":"published","key":"k","generation":-1})", "'generation'");
  expect_error<Miss>(R"({"v":1,"type":"miss","key":7,"count":1})", "'key'");
}

TEST(Messages, IgnoresUnknownFields) {
  auto r = decode_daemon_message(R"({"v":1,"type":"published","key":"k","generation":5,"extra":[1]})");
  ASSERT_TRUE(std::holds_alternative<DaemonMessage>(r));
  EXPECT_EQ(std::get<Published>(std::get<DaemonMessage>(r)).generation, 5u);
}

TEST(SocketPath, EnvironmentThenRuntimeDirThenCacheDir) {
  test::TempDir dir;
  ::unsetenv("KD_SOCKET");
  ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(daemon_socket_path(dir.path()), dir.path() / "kdispatch.sock");
  ::setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  EXPECT_EQ(daemon_socket_path(dir.path()), std::filesystem::path("/run/user/7/kdispatch.sock"));
  ::setenv("KD_SOCKET", "/tmp/x.sock", 1);
  EXPECT_EQ(daemon_socket_path(dir.path()), std::filesystem::path("/tmp/x.sock"));
  ::unsetenv("KD_SOCKET");
  ::unsetenv("XDG_RUNTIME_DIR");
}

}  // namespace
}  // namespace kd::protocol
