// kill -9 of the real kdispatchd while it evicts records and while it purges jobs, 50 times each,
// with acknowledged requests arriving meanwhile: no acknowledged job is lost, every record left
// decodes, and the job counts and index still match the jobs (the next start needs no rebuild).
// Small caches and short runs keep each test to a few seconds.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "client/client.hpp"
#include "daemon_process.hpp"
#include "queue/job_store.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using daemon::Client;
using daemon::Job;
using daemon::JobState;
using daemon::JobTxn;
using nlohmann::json;
using test::DaemonProcess;
using test::test_key;

constexpr int kRounds = 50;

// Runs `body` with a JobTxn in one write transaction of the cache, as the daemon's queue does.
template <class Body>
void with_jobs(const std::filesystem::path& cache, Body body) {
  CacheWriter w(cache);
  w.write_records([&](const lmdb::Txn& txn) {
    const auto dbs = daemon::open_job_dbs(txn);
    auto base = daemon::stored_counts(txn, dbs);
    JobTxn jt(txn, dbs, base ? *base : daemon::rebuild_index(txn, dbs));
    body(jt);
    jt.write_counts();
    return false;
  });
}

// Sends acknowledged requests (`make(i)` builds the i-th) until the daemon dies; returns the
// indices it acknowledged.
std::set<int> acknowledge_until_killed(const DaemonProcess& d, const std::function<json(int)>& make,
                                       std::atomic<bool>& stop) {
  std::set<int> acked;
  try {
    Client c(d.socket());
    for (int i = 0; !stop; ++i) {
      const json r = c.request(make(i), std::chrono::seconds(5));
      if (r.at("type") != "ok") break;
      acked.insert(i);
    }
  } catch (const std::exception&) {
    // the daemon was killed
  }
  return acked;
}

// What must hold after any kill: the counts and index agree with the jobs (stored_counts finds
// them consistent), no job record is unreadable, every record decodes under its own key, and
// every acknowledged job is there. Returns the number of records and the counts.
struct Checked {
  std::size_t records = 0;
  daemon::QueueCounts counts;
};
Checked check_cache(const std::filesystem::path& cache, const std::vector<std::string>& acked_keys) {
  CacheWriter w(cache);
  std::size_t records = 0;
  for (const auto& [key, bytes] : w.scan_raw("records")) {
    const auto decoded = deserialize_record(bytes);
    const auto* r = std::get_if<Record>(&decoded);
    EXPECT_TRUE(r != nullptr && r->key_line == key) << "torn record " << key;
    ++records;
  }
  const lmdb::Txn txn(w.env(), lmdb::Access::read_only);
  const auto dbs = daemon::open_job_dbs(txn);
  const auto counts = daemon::stored_counts(txn, dbs);
  EXPECT_TRUE(counts.has_value()) << "job counts or index do not match the jobs";
  if (counts) {
    EXPECT_EQ(counts->unreadable, 0u);
  }
  for (const auto& key : acked_keys) EXPECT_TRUE(daemon::get_job(txn, dbs, key).has_value()) << "lost " << key;
  return {records, counts.value_or(daemon::QueueCounts{})};
}

TEST(DaemonKillBounds, KillNineDuringEvictionLosesNoAcknowledgedJobAndTearsNoRecord) {
  test::TempDir dir;
  const auto cache = dir.path() / "cache";
  // 600 records of 1.5 KiB (2.3 MB) over a 64 KiB limit: 10 batches, some 100 ms of eviction.
  constexpr int kRecords = 600;
  std::mt19937 rng(11);
  std::vector<std::string> acked_keys;
  int killed_midway = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Refill: records with done jobs, as searches leave them, used long ago.
    with_jobs(cache, [&](JobTxn& jt) {
      for (int n = 1; n <= kRecords; ++n) {
        if (lmdb::get(jt.txn(), jt.dbs().records, test_key(n))) continue;
        Record r;
        r.key_line = test_key(n);
        r.cubin = std::string(1536, 'r');
        r.created_unix_s = 1000 + n;
        lmdb::put(jt.txn(), jt.dbs().records, r.key_line, serialize_record(r));
        Job j;
        j.key = r.key_line;
        j.state = JobState::done;
        j.published_generation = 1;
        jt.put(j, jt.get(j.key));
      }
    });
    auto d = std::make_unique<DaemonProcess>(
        dir.path(), std::vector<std::string>{},
        "workers = \"none\"\nmax_cache_bytes = 65536\nmaintenance_interval_ms = 600000\nlog_level = \"warn\"\n");
    std::atomic<bool> stop{false};
    std::set<int> acked;
    std::thread writer([&] {
      acked = acknowledge_until_killed(*d, [&](int i) {
        return json{{"type", "prewarm"}, {"keys", {test_key(100000 + round * 1000 + i)}}};
      }, stop);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + rng() % 120));
    ::kill(d->pid(), SIGKILL);
    stop = true;
    writer.join();
    d.reset();
    for (const int i : acked) acked_keys.push_back(test_key(100000 + round * 1000 + i));
    const std::size_t after = check_cache(cache, acked_keys).records;
    if (after < kRecords && after > kRecords / 20) ++killed_midway;
  }
  ASSERT_FALSE(acked_keys.empty());
  std::printf("eviction killed mid-way in %d of %d rounds\n", killed_midway, kRounds);
}

TEST(DaemonKillBounds, KillNineDuringPurgeLosesNoAcknowledgedJob) {
  test::TempDir dir;
  const auto cache = dir.path() / "cache";
  constexpr int kExpired = 1200;  // three purge transactions: 400 failed, 800 cancelled
  std::mt19937 rng(13);
  std::vector<std::string> acked_keys;
  int killed_midway = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::size_t expired = 0;
    with_jobs(cache, [&](JobTxn& jt) {
      for (int n = 1; n <= kExpired; ++n) {
        Job j;
        j.key = test_key(n);
        if (lmdb::get(jt.txn(), jt.dbs().jobs, j.key)) continue;
        j.state = n % 3 == 0 ? JobState::failed : JobState::cancelled;
        j.updated_unix_ms = 1000 + n;  // long expired
        jt.put(j, std::nullopt);
      }
      expired = jt.counts().of(JobState::cancelled) + jt.counts().of(JobState::failed);
    });

    auto d = std::make_unique<DaemonProcess>(
        dir.path(), std::vector<std::string>{},
        "workers = \"none\"\njob_retention_s = 1\nmaintenance_interval_ms = 600000\nlog_level = \"warn\"\n");
    std::atomic<bool> stop{false};
    std::set<int> acked;
    std::thread writer([&] {
      acked = acknowledge_until_killed(*d, [&](int i) {
        return json{{"type", "miss"},
                    {"keys", {{{"key", test_key(100000 + round * 1000 + i)}, {"count", 1}}}},
                    {"ack", true}};
      }, stop);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
    ::kill(d->pid(), SIGKILL);
    stop = true;
    writer.join();
    d.reset();
    for (const int i : acked) acked_keys.push_back(test_key(100000 + round * 1000 + i));
    const daemon::QueueCounts counts = check_cache(cache, acked_keys).counts;
    const auto left = counts.of(JobState::cancelled) + counts.of(JobState::failed);
    if (left > 0 && left < expired) ++killed_midway;
  }
  ASSERT_FALSE(acked_keys.empty());
  std::printf("purge killed mid-way in %d of %d rounds\n", killed_midway, kRounds);
}

}  // namespace
}  // namespace kd
