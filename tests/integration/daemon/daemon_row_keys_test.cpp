// Issue 33: row-operator key lines (rmsnorm, layernorm, softmax) through the real kdispatchd as
// GEMM lines go: a client's miss report and a prewarm queue them as jobs, always exact (the miss
// buckets of n never touch them), and a malformed one is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using daemon::Client;
using nlohmann::json;

const std::string kLayernorm = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1";
const std::string kRmsnorm = "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1";
const std::string kSoftmax = "softmax dtype=f32 rows=4096 cols=65536";

TEST(DaemonRowKeys, MissesAndPrewarmQueueRowLinesAsExactJobs) {
  HiddenGpus no_gpu;  // no home GPU: a shape line stays a shape line
  TempDir dir;
  DaemonProcess d(dir.path(), {"--buckets", "default"});
  Client c(d.socket());
  // Blank runs between tokens are canonicalized, as for GEMM lines.
  const std::string spaced = "layernorm  dtype=f32 rows=4096   cols=1024 weight=1 bias=1";
  const json ack = c.request({{"type", "miss"},
                              {"keys", {{{"key", kLayernorm}, {"count", 2}}, {{"key", spaced}, {"count", 3}},
                                        {{"key", kRmsnorm}, {"count", 1}}}},
                              {"ack", true}});
  ASSERT_EQ(ack.at("accepted"), 3) << ack.dump();
  EXPECT_TRUE(ack.at("rejected").empty()) << ack.dump();
  const json p = c.request({{"type", "prewarm"}, {"keys", {kSoftmax, kLayernorm}}});
  ASSERT_EQ(p.at("queued"), 2) << p.dump();

  const json jobs = c.request({{"type", "jobs"}, {"keys", {kLayernorm, kRmsnorm, kSoftmax}}});
  const auto& list = jobs.at("jobs");
  ASSERT_EQ(list.size(), 3u) << jobs.dump();
  for (const auto& j : list) EXPECT_EQ(j.at("state"), "queued") << jobs.dump();
  EXPECT_EQ(list[0].at("count"), 5) << "both spellings of the layernorm line are one exact job";
  EXPECT_EQ(list[1].at("count"), 1);
  const protocol::Status status = Client::status(d.socket(), 10);
  EXPECT_EQ(status.jobs.queued, 3u) << "one job per row line, none bucketed";
  std::vector<std::string> keys;
  for (const auto& j : status.top_jobs.value()) keys.push_back(j.key);
  EXPECT_NE(std::find(keys.begin(), keys.end(), kLayernorm), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), kRmsnorm), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), kSoftmax), keys.end());
}

TEST(DaemonRowKeys, AFullRowKeyIsItsOwnJobWithItsDevicePart) {
  TempDir dir;
  DaemonProcess d(dir.path());
  Client c(d.socket());
  const std::string full = kRmsnorm + " arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
  const json p = c.request({{"type", "prewarm"}, {"keys", {full}}});
  ASSERT_EQ(p.at("queued"), 1) << p.dump();
  const json jobs = c.request({{"type", "jobs"}, {"keys", {full}}});
  EXPECT_EQ(jobs.at("jobs")[0].at("state"), "queued") << jobs.dump();
}

TEST(DaemonRowKeys, MalformedRowLinesAreRefusedByName) {
  TempDir dir;
  DaemonProcess d(dir.path());
  Client c(d.socket());
  const json bad = c.request({{"type", "prewarm"},
                              {"keys", {"softmax dtype=f32 rows=4 cols=8 weight=1",
                                        "layernorm dtype=f32 rows=0 cols=1024 weight=1 bias=1",
                                        "groupnorm dtype=f32 rows=4 cols=8"}}});
  EXPECT_EQ(bad.at("queued"), 0) << bad.dump();
  const auto& rejected = bad.at("rejected");
  ASSERT_EQ(rejected.size(), 3u) << bad.dump();
  EXPECT_NE(rejected[0].at("message").get<std::string>().find("softmax takes no weight or bias"), std::string::npos)
      << bad.dump();
  EXPECT_NE(rejected[2].at("message").get<std::string>().find("unknown op"), std::string::npos) << bad.dump();
  const json miss = c.request({{"type", "miss"}, {"keys", {{{"key", "rmsnorm dtype=f32 rows=4"}, {"count", 1}}}},
                               {"ack", true}});
  EXPECT_EQ(miss.at("accepted"), 0) << miss.dump();
  EXPECT_EQ(miss.at("rejected").size(), 1u) << miss.dump();
  EXPECT_EQ(Client::status(d.socket()).jobs.queued, 0u);
}

}  // namespace
}  // namespace kd::test
