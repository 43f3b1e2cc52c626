// The daemon protocol: frame codec and message codec, including every way input can be wrong.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
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

TEST(Messages, EveryTypeRoundTrips) {
  const Message all[] = {Hello{42, "libkdispatch"}, Miss{"gemm a=f32 m=1", 3}, Subscribe{},
                         Published{"gemm a=bf16", 17}, ErrorMessage{"nope"},
                         Usage{{"gemm a=f32 m=1", "gemm a=f32 m=2"}}};
  for (const Message& m : all) {
    FrameDecoder d;
    d.feed(encode_message(m));
    auto decoded = decode_message(payload_of(d.next()));
    ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<ProtocolError>(decoded).message;
    EXPECT_EQ(std::get<Message>(decoded), m);
  }
}

void expect_error(std::string_view payload, std::string_view mentions) {
  auto r = decode_message(payload);
  ASSERT_TRUE(std::holds_alternative<ProtocolError>(r)) << payload;
  EXPECT_NE(std::get<ProtocolError>(r).message.find(mentions), std::string::npos)
      << std::get<ProtocolError>(r).message;
}

TEST(Messages, UsageNamesABoundedNumberOfKeys) {
  Usage big;
  big.keys.assign(kMaxUsageKeys + 1, "gemm a=f32 m=1");
  expect_error(to_json(big), "more than");
  expect_error(R"({"v":1,"type":"usage","keys":[1]})", "keys");
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

TEST(Messages, ClientStatsAndHelloFeaturesRoundTrip) {
  ClientStats last = sample_stats();
  last.final = true;
  const Message all[] = {sample_stats(), last, Acknowledged{"hello_ok", {"client_stats"}},
                         Acknowledged{"ok", {}}};
  for (const Message& m : all) {
    FrameDecoder d;
    d.feed(encode_message(m));
    auto decoded = decode_message(payload_of(d.next()));
    ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<ProtocolError>(decoded).message;
    EXPECT_EQ(std::get<Message>(decoded), m) << to_json(m);
  }
  // An older daemon's hello_ok has no features: the client then sends no client_stats.
  auto old = decode_message(R"({"v":1,"type":"hello_ok","version":1,"generation":0})");
  ASSERT_TRUE(std::holds_alternative<Message>(old));
  EXPECT_TRUE(std::get<Acknowledged>(std::get<Message>(old)).features.empty());
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
  expect_error(R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":1,"misses":0})",
               "'fallbacks'");
  expect_error(R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":-1,"misses":0,"fallbacks":{}})",
               "'hits'");
  expect_error(R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i","hits":1,"misses":0,"fallbacks":{"no_entry":"3"}})",
               "no_entry");
  expect_error(R"({"v":1,"type":"client_stats","pid":1,"program":"p","instance":"i!","hits":1,"misses":0,"fallbacks":{}})",
               "'instance'");
  expect_error(R"({"v":1,"type":"hello_ok","features":"client_stats"})", "'features'");
}

TEST(Messages, CarriesVersionAndType) {
  EXPECT_EQ(to_json(Subscribe{}), R"({"type":"subscribe","v":1})");
}

TEST(Messages, RejectsBadInput) {
  expect_error("{not json", "bad JSON");
  expect_error("[1,2]", "not a JSON object");
  expect_error(R"({"type":"subscribe"})", "version");
  expect_error(R"({"v":2,"type":"subscribe"})", "version 2");
  expect_error(R"({"v":1,"type":"launch"})", "unknown message type");
  expect_error(R"({"v":1})", "'type'");
  expect_error(R"({"v":1,"type":"published","key":"k"})", "'generation'");
  expect_error(R"({"v":1,"type":"published","key":"k","generation":-1})", "'generation'");
  expect_error(R"({"v":1,"type":"miss","key":7,"count":1})", "'key'");
}

TEST(Messages, IgnoresUnknownFields) {
  auto r = decode_message(R"({"v":1,"type":"published","key":"k","generation":5,"extra":[1]})");
  ASSERT_TRUE(std::holds_alternative<Message>(r));
  EXPECT_EQ(std::get<Published>(std::get<Message>(r)).generation, 5u);
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
