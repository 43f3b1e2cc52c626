// kdctl purge, the real executable: through the real kdispatchd when one answers (it says what it
// removed, and the daemon's counts follow), and with the cache's writer lock when none runs.
#include <gtest/gtest.h>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "queue/job_queue.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using nlohmann::json;

// Three queued jobs, two of them cancelled, through the daemon.
void queue_and_cancel(const DaemonProcess& d) {
  daemon::Client c(d.socket());
  json keys = json::array();
  for (int n = 1; n <= 3; ++n) keys.push_back({{"key", test_key(n)}, {"count", 1}});
  ASSERT_EQ(c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}}).at("type"), "ok");
  for (int n = 1; n <= 2; ++n) ASSERT_TRUE(c.request({{"type", "cancel"}, {"key", test_key(n)}}).at("cancelled"));
}

TEST(KdctlPurge, ThroughTheDaemonSaysWhatItRemoved) {
  TempDir tmp;
  DaemonProcess d(tmp.path(), {}, "workers = \"none\"\n");
  queue_and_cancel(d);
  const std::string socket = "--socket=" + d.socket().string();

  const auto bad = run_kdctl(tmp.path(), {"purge", socket, "--state", "queued"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("done, failed and cancelled"), std::string::npos) << bad.err;

  const auto dry = run_kdctl(tmp.path(), {"purge", socket, "--dry-run"});
  EXPECT_EQ(dry.rc, 0) << dry.err;
  EXPECT_NE(dry.out.find("would remove 2 finished job(s): 0 done, 0 failed, 2 cancelled"), std::string::npos)
      << dry.out;
  const auto young = run_kdctl(tmp.path(), {"purge", socket, "--older-than", "1d"});
  EXPECT_NE(young.out.find("removed 0 finished job(s)"), std::string::npos) << young.out;

  const auto r = run_kdctl(tmp.path(), {"purge", socket, "--state", "cancelled"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("removed 2 finished job(s): 0 done, 0 failed, 2 cancelled"), std::string::npos) << r.out;
  const protocol::Status s = daemon::Client::status(d.socket());
  EXPECT_EQ(s.jobs.cancelled, 0u);
  EXPECT_EQ(s.jobs.queued, 1u);
}

TEST(KdctlPurge, WithoutADaemonItPurgesTheCacheItself) {
  TempDir tmp;
  {
    DaemonProcess d(tmp.path(), {}, "workers = \"none\"\n");
    queue_and_cancel(d);
    d.stop(SIGTERM);
  }
  const std::string cache = "--cache-dir=" + (tmp.path() / "cache").string();
  const std::string nobody = "--socket=" + (tmp.path() / "nobody.sock").string();
  const auto r = run_kdctl(tmp.path(), {"purge", cache, nobody});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("removed 2 finished job(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no daemon answers"), std::string::npos) << r.out;

  DaemonProcess again(tmp.path(), {}, "workers = \"none\"\n");
  const protocol::Status s = daemon::Client::status(again.socket());
  EXPECT_EQ(s.jobs.cancelled, 0u);
  EXPECT_EQ(s.jobs.queued, 1u);
  // A daemon that holds the cache but is not reached on the socket given: nothing is touched.
  const auto held = run_kdctl(tmp.path(), {"purge", cache, nobody});
  EXPECT_EQ(held.rc, 1);
  EXPECT_NE(held.err.find("does not answer"), std::string::npos) << held.err;
}

}  // namespace
}  // namespace kd::test
