// Replies of the real kdispatchd stay within the frame limit whatever a client sends (issue 28):
// over-long keys are rejected by name and echoed cut, the stats reply trims its per-process list,
// error messages are bounded, and none of it stops the daemon or disturbs another client.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "key/gemm_key.hpp"
#include "protocol/frame.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using daemon::Client;
using nlohmann::json;

// A key line of `bytes` bytes: a valid key whose GPU name is padded out (so only its length is wrong).
std::string long_key(std::size_t bytes) {
  std::string key = test_key(1);
  const auto quote = key.find('"') + 1;
  key.insert(quote, std::string(bytes - key.size(), 'G'));
  return key;
}

class DaemonLimits : public ::testing::Test {
protected:
  void SetUp() override { daemon_ = std::make_unique<DaemonProcess>(dir_.path()); }
  // The daemon still runs and still answers another client.
  void expect_serving() {
    ASSERT_TRUE(daemon_->running()) << daemon_->log();
    EXPECT_EQ(bystander_->request({{"type", "status"}}).at("type"), "status");
  }
  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Client> bystander_ = nullptr;
  void connect_bystander() { bystander_ = std::make_unique<Client>(daemon_->socket()); }
};

TEST_F(DaemonLimits, AcknowledgedMissOfAHalfMegabyteKeyIsRejectedByName) {
  connect_bystander();
  Client c(daemon_->socket());
  const std::string huge = long_key(530000);
  const json r = c.request({{"type", "miss"}, {"key", huge}, {"ack", true}});
  ASSERT_EQ(r.at("type"), "ok") << r.dump().substr(0, 300);
  EXPECT_EQ(r.at("accepted"), 0);
  ASSERT_EQ(r.at("rejected").size(), 1u);
  const std::string echoed = r.at("rejected")[0].at("key");
  EXPECT_LE(echoed.size(), kMaxKeyLineBytes);
  EXPECT_EQ(echoed.substr(0, 20), huge.substr(0, 20));
  EXPECT_EQ(r.at("rejected")[0].at("message"),
            "column 503: the line is 530000 bytes, longer than the 502-byte limit of a key line");
  // The same connection goes on.
  EXPECT_EQ(c.request({{"type", "status"}}).at("type"), "status");
  expect_serving();
}

TEST_F(DaemonLimits, BatchOfLongKeysAndAHugePrewarmKeyGetSmallReplies) {
  connect_bystander();
  Client c(daemon_->socket());
  json keys = json::array();
  for (int i = 0; i < 16; ++i) keys.push_back({{"key", long_key(40000 + static_cast<std::size_t>(i))}});
  keys.push_back({{"key", test_key(7)}, {"count", 2}});
  const json r = c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}});
  ASSERT_EQ(r.at("type"), "ok");
  EXPECT_EQ(r.at("accepted"), 1);
  EXPECT_EQ(r.at("rejected").size(), 16u);
  EXPECT_LT(r.dump().size(), 32u * 1024);

  const json p = c.request({{"type", "prewarm"}, {"keys", {long_key(600000), test_key(8)}}});
  ASSERT_EQ(p.at("type"), "ok");
  EXPECT_EQ(p.at("queued"), 1);
  EXPECT_EQ(p.at("rejected").size(), 1u);
  expect_serving();
  EXPECT_EQ(Client::status(daemon_->socket(), 10).jobs.queued, 2u);  // test_key(7) and test_key(8), nothing else
}

// A key at the limit is queued (its job index key is LMDB's largest, 511 bytes); one byte over is
// rejected.
TEST_F(DaemonLimits, KeyAtTheLimitIsQueuedOneByteOverIsRejected) {
  Client c(daemon_->socket());
  const json r = c.request({{"type", "miss"},
                            {"keys", {{{"key", long_key(kMaxKeyLineBytes)}}, {{"key", long_key(kMaxKeyLineBytes + 1)}}}},
                            {"ack", true}});
  ASSERT_EQ(r.at("type"), "ok");
  EXPECT_EQ(r.at("accepted"), 1);
  EXPECT_EQ(r.at("rejected").size(), 1u);
  const protocol::Status s = Client::status(daemon_->socket(), 10);
  ASSERT_EQ(s.top_jobs.value().size(), 1u);
  EXPECT_EQ(s.top_jobs.value()[0].key, long_key(kMaxKeyLineBytes));
}

// A type name of almost a megabyte: the error that names it is cut, the client alone is dropped.
TEST_F(DaemonLimits, MegabyteTypeNameGetsABoundedErrorAndACloseOfThatClientOnly) {
  connect_bystander();
  Client c(daemon_->socket());
  c.send({{"type", std::string(protocol::kMaxFramePayloadBytes - 64, 'x')}});
  const auto e = c.receive(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->at("type"), "error");
  EXPECT_LT(e->at("message").get<std::string>().size(), 5000u);
  EXPECT_FALSE(c.receive(std::chrono::seconds(5)).has_value());
  expect_serving();
}

// A fallback reason whose cut for the error message splits a two-byte character (the message was
// once not valid UTF-8, and encoding it threw out of the io loop).
TEST_F(DaemonLimits, ErrorTextCutInsideAUtf8CharacterStillEncodes) {
  connect_bystander();
  Client c(daemon_->socket());
  c.send({{"type", "client_stats"},
          {"pid", 1},
          {"program", "p"},
          {"instance", "abc"},
          {"hits", 0},
          {"misses", 0},
          {"fallbacks", {{std::string(63, 'a') + "\xc3\xa9", 1}}}});
  const auto e = c.receive(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->at("type"), "error");
  expect_serving();
}

// 300 live processes with the largest reports the protocol allows: the stats reply lists those
// it can within its budget and says how many it left out.
TEST_F(DaemonLimits, StatsReplyFitsWithManyLargeClients) {
  connect_bystander();
  constexpr int kClients = 300;
  json fallbacks = json::object();
  for (int r = 0; r < 64; ++r) fallbacks[std::string(60, 'r') + std::to_string(1000 + r)] = 1000000 + r;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(daemon_->socket()));
    clients.back()->send({{"type", "client_stats"},
                          {"pid", 1000 + i},
                          {"program", std::string(256, 'p')},
                          {"instance", std::string(60, 'i') + std::to_string(1000 + i)},
                          {"hits", 1000 + i},
                          {"misses", 1},
                          {"fallbacks", fallbacks}});
  }
  for (auto& c : clients) ASSERT_EQ(c->request({{"type", "status"}}).at("type"), "status");
  const json stats = protocol::to_object(Client::stats(daemon_->socket()));
  const json& live = stats.at("clients");
  EXPECT_EQ(live.at("processes_live"), kClients);
  EXPECT_GT(live.at("live_omitted").get<int>(), 0);
  EXPECT_EQ(live.at("live").size() + live.at("live_omitted").get<std::size_t>(), static_cast<std::size_t>(kClients));
  EXPECT_LT(stats.dump().size(), protocol::kMaxFramePayloadBytes / 2);
  // Those listed are the busiest.
  for (const json& p : live.at("live")) EXPECT_GE(p.at("hits").get<int>(), 1000 + kClients - 200);
  expect_serving();
}

// `jobs` answers per key, in the client's spelling; at most 500 keys per request.
TEST_F(DaemonLimits, JobsAnswersPerKeyWithinItsLimit) {
  Client c(daemon_->socket());
  ASSERT_EQ(c.request({{"type", "prewarm"}, {"keys", {test_key(3)}}}).at("type"), "ok");
  const json r = c.request({{"type", "jobs"}, {"keys", {test_key(3), test_key(4), "gemm nonsense"}}});
  ASSERT_EQ(r.at("type"), "jobs");
  ASSERT_EQ(r.at("jobs").size(), 3u);
  EXPECT_EQ(r.at("jobs")[0].at("key"), test_key(3));
  EXPECT_EQ(r.at("jobs")[0].at("state"), "queued");
  EXPECT_EQ(r.at("jobs")[1].at("state"), "unknown");
  EXPECT_EQ(r.at("jobs")[2].at("state"), "invalid");
  EXPECT_NE(r.at("jobs")[2].at("reason").get<std::string>().find("column"), std::string::npos);

  json many = json::array();
  for (int i = 0; i < 501; ++i) many.push_back(test_key(1 + i));
  const json refused = c.request({{"type", "jobs"}, {"keys", many}});
  EXPECT_EQ(refused.at("type"), "error");
  EXPECT_NE(refused.at("message").get<std::string>().find("at most 500"), std::string::npos);
}

}  // namespace
}  // namespace kd::test
