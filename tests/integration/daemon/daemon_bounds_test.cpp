// The real kdispatchd keeping its bounds: the bound on queued jobs, purge over the protocol, and
// least-recently-used eviction seen by a running application (libkdispatch's dispatcher in this
// process, subscribed to the daemon): evicted entries are dropped on the daemon's notice, and the
// records the application hit are the ones that stay.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "runtime/dispatcher.hpp"
#include "daemon_process.hpp"
#include "store/cache_store.hpp"
#include "store/record_usage.hpp"
#include "support/commit_in_child.hpp"
#include "support/eventually.hpp"
#include "support/host_entry_loader.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using namespace std::chrono_literals;
using daemon::Client;
using nlohmann::json;

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CallKey call_key(std::int64_t n) {
  CallKey k;
  k.context = 0xD0;
  k.m = 4096;
  k.n = n;
  k.k = 4096;
  return k;
}

// Loads records without CUDA (the dispatcher's only GPU seam): key n is test_key(n).
std::unique_ptr<EntryLoader> host_loader() {
  return std::make_unique<HostEntryLoader>([](const CallKey& key) { return test_key(static_cast<int>(key.n)); });
}

bool hits(Dispatcher& d, std::int64_t n) { return lookup_as_caller(d, call_key(n)).entry != nullptr; }

// A record of 64 KiB of cubin: 17 overflow pages of 4 KiB (69632 bytes) in the records database.
Record record(int n, std::int64_t created_unix_s) {
  Record r;
  r.key_line = test_key(n);
  r.cubin = std::string(64 * 1024, 'c');
  r.created_unix_s = created_unix_s;
  return r;
}

std::string daemon_toml(std::uint64_t max_cache_bytes) {
  return "workers = \"none\"\nmaintenance_interval_ms = 100\nmax_cache_bytes = " + std::to_string(max_cache_bytes) +
         "\n";
}

// The dispatcher has read hello_ok and reports to the daemon (so it is subscribed, and its usage
// reports are accepted).
bool reporting(const DaemonProcess& d) { return Client::status(d.socket()).clients_reporting == 1; }

DispatcherOptions dispatcher_options(const DaemonProcess& d) {
  DispatcherOptions o;
  o.cache_dir = d.cache_dir();
  o.socket_path = d.socket();
  o.poll_interval = 50ms;
  return o;
}

TEST(DaemonBounds, QueuedJobsStayWithinTheBoundAndStatusShowsIt) {
  TempDir dir;
  DaemonProcess d(dir.path(), {}, "workers = \"none\"\nmax_queued_jobs = 5\n");
  Client c(d.socket());
  json keys = json::array();
  for (int n = 1; n <= 12; ++n) keys.push_back({{"key", test_key(n)}, {"count", n == 12 ? 1000000 : 1}});
  ASSERT_EQ(c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}}).at("type"), "ok");
  const json s = c.request({{"type", "status"}, {"jobs", 20}});
  EXPECT_EQ(s.at("jobs").at("queued"), 5);
  EXPECT_EQ(s.at("bounds").at("max_queued_jobs"), 5);
  EXPECT_EQ(s.at("bounds").at("jobs_dropped"), 7);
  EXPECT_EQ(s.at("top_jobs").at(0).at("key"), test_key(12)) << "the most called key is kept";
  EXPECT_NE(http_get(d.metrics_port(), "/metrics").find("kdispatch_jobs_dropped_total 7"), std::string::npos);
}

TEST(DaemonBounds, PurgeOverTheProtocolSaysWhatItRemoved) {
  TempDir dir;
  DaemonProcess d(dir.path(), {}, "workers = \"none\"\n");
  Client c(d.socket());
  json keys = json::array();
  for (int n = 1; n <= 4; ++n) keys.push_back({{"key", test_key(n)}, {"count", 1}});
  ASSERT_EQ(c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}}).at("type"), "ok");
  for (int n = 1; n <= 3; ++n) ASSERT_TRUE(c.request({{"type", "cancel"}, {"key", test_key(n)}}).at("cancelled"));

  const json bad = c.request({{"type", "purge"}, {"states", {"queued"}}});
  EXPECT_EQ(bad.at("type"), "error");
  EXPECT_NE(bad.at("message").get<std::string>().find("done, failed and cancelled"), std::string::npos);

  const json young = c.request({{"type", "purge"}, {"older_than_s", 3600}});
  EXPECT_EQ(young.at("total"), 0);  // an hour: nothing is that old
  const json dry = c.request({{"type", "purge"}, {"states", {"cancelled"}}, {"dry_run", true}});
  EXPECT_EQ(dry.at("removed").at("cancelled"), 3);
  EXPECT_EQ(c.request({{"type", "status"}}).at("jobs").at("cancelled"), 3);
  const json r = c.request({{"type", "purge"}, {"states", {"cancelled", "failed"}}});
  EXPECT_EQ(r.at("removed").at("cancelled"), 3);
  EXPECT_EQ(r.at("total"), 3);
  const json s = c.request({{"type", "status"}});
  EXPECT_EQ(s.at("jobs").at("cancelled"), 0);
  EXPECT_EQ(s.at("jobs").at("queued"), 1);
  EXPECT_EQ(s.at("bounds").at("jobs_purged"), 3);
}

// The dispatcher does not poll the cache while it is connected: only the daemon's notice after
// an eviction can make it drop the entries.
TEST(DaemonBounds, EvictedRecordsAreDroppedByRunningApplications) {
  TempDir dir;
  const auto cache = dir.path() / "cache";
  {
    CacheWriter w(cache);
    w.commit_record(record(1, 1000));
    w.commit_record(record(2, 1000));
  }
  // Two records take 143360 bytes, four 282624: over the limit, eviction goes down to 180000.
  DaemonProcess d(dir.path(), {}, daemon_toml(200000));
  Dispatcher disp(dispatcher_options(d), host_loader());
  ASSERT_TRUE(eventually([&] { return hits(disp, 1) && hits(disp, 2); }));
  ASSERT_TRUE(eventually([&] { return reporting(d); }));
  const auto generation = Client::status(d.socket()).generation;

  ASSERT_EQ(commit_in_child(cache, {record(3, now_s() + 1000), record(4, now_s() + 1000)}), 0);  // the newest
  EXPECT_TRUE(eventually([&] { return !hits(disp, 1) && !hits(disp, 2); })) << d.log();
  const protocol::Status s = Client::status(d.socket());
  EXPECT_EQ(s.bounds.value().records_evicted, 2u);
  EXPECT_GT(s.generation, generation + 2);  // the two publishes, an eviction
  EXPECT_LE(s.bounds.value().cache_bytes, 180000u);
}

TEST(DaemonBounds, TheRecordsApplicationsHitAreTheOnesThatStay) {
  TempDir dir;
  const auto cache = dir.path() / "cache";
  {
    CacheWriter w(cache);
    w.commit_record(record(1, now_s() - 200));  // older: without its hits it would go first
    w.commit_record(record(2, now_s() - 100));
  }
  // Three records take 212992 bytes, under the limit; four are over it, and one eviction brings
  // them under 225000.
  DaemonProcess d(dir.path(), {}, daemon_toml(250000));
  {
    Dispatcher disp(dispatcher_options(d), host_loader());
    ASSERT_TRUE(eventually([&] { return hits(disp, 1); }));  // record 2 is loaded, never hit
    (void)lookup_as_caller(disp, call_key(2));
    ASSERT_TRUE(eventually([&] { return reporting(d); }));
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(hits(disp, 1));
    disp.stop_background();  // the last usage report goes with the final counters
  }
  ASSERT_TRUE(eventually([&] {
    CacheWriter w(cache);
    return w.get_raw(kUsageDb, test_key(1)).has_value();
  })) << d.log();
  ASSERT_EQ(commit_in_child(cache, {record(3, now_s() + 1000), record(4, now_s() + 1000)}), 0);
  ASSERT_TRUE(eventually([&] { return Client::status(d.socket()).bounds.value().records_evicted == 1; }))
      << d.log();
  CacheWriter w(cache);
  EXPECT_TRUE(w.get_raw("records", test_key(1)).has_value());
  EXPECT_FALSE(w.get_raw("records", test_key(2)).has_value());
}

}  // namespace
}  // namespace kd::test
