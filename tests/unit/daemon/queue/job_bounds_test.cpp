// The queue's bounds in-process: counts kept per state across reopen (and rebuilt for a cache
// without the index), the bound on queued jobs, purging finished jobs, usage notes, and
// least-recently-used eviction of records.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "job_queue_sync.hpp"
#include "queue/job_queue.hpp"
#include "store/record_usage.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::string key(int n) { return test::job_key(n); }
using test::misses_sync;

std::vector<Refused> prewarm_sync(JobQueue& q, std::vector<PrewarmRequest> r) {
  std::promise<std::vector<Refused>> p;
  q.prewarm(std::move(r), [&](const CommitResult& c, const std::vector<Refused>& refused) {
    EXPECT_TRUE(c.committed);
    p.set_value(refused);
  });
  return p.get_future().get();
}

void cancel_sync(JobQueue& q, const std::string& k) {
  std::promise<bool> p;
  q.cancel(k, [&](const CommitResult&, bool found) { p.set_value(found); });
  ASSERT_TRUE(p.get_future().get());
}

// A record of about `bytes` bytes (its cubin) for key(n), made with `search_id`.
Record record(int n, std::size_t bytes, std::string search_id = {}) {
  Record r;
  r.key_line = key(n);
  r.cubin = std::string(bytes, 'x');
  r.search_id = std::move(search_id);
  r.created_unix_s = 1;
  return r;
}

TEST(JobCounts, KeptPerStateAndStoredSoReopeningReadsNoJob) {
  test::TempDir dir;
  QueueCounts before;
  {
    JobQueue q(dir.path());
    misses_sync(q, {{key(1), 5}, {key(2), 1}, {key(3), 1}, {key(4), 1}});
    cancel_sync(q, key(2));
    q.update(key(3), [](Job& j) { j.state = JobState::done; });
    ASSERT_TRUE(q.claim_next([&](const Job& j) { return j.key == key(1); }).has_value());
    before = q.counts();
    EXPECT_EQ(before.of(JobState::queued), 1u);
    EXPECT_EQ(before.of(JobState::running), 1u);
    EXPECT_EQ(before.of(JobState::done), 1u);
    EXPECT_EQ(before.of(JobState::cancelled), 1u);
  }
  {
    CacheWriter w(dir.path());  // the stored counts agree with the databases: no rebuild needed
    const lmdb::Txn txn(w.env(), lmdb::Access::read_write);
    const auto stored = stored_counts(txn, open_job_dbs(txn));
    ASSERT_TRUE(stored.has_value());
    EXPECT_EQ(*stored, before);
  }
  JobQueue again(dir.path());
  QueueCounts resumed = before;  // the running job went back to queued
  resumed.by_state[static_cast<std::size_t>(JobState::running)] = 0;
  resumed.by_state[static_cast<std::size_t>(JobState::queued)] = 2;
  EXPECT_EQ(again.counts(), resumed);
}

TEST(JobCounts, ACacheWithoutTheIndexIsIndexedInTheBackground) {
  test::TempDir dir;
  {
    // As an older daemon left it: job records only, one damaged.
    CacheWriter w(dir.path());
    for (int n : {16, 4096, 64}) {
      Job j;
      j.key = key(n);
      j.count = n == 16 ? 1000 : 1;
      j.est_call_us = estimate_call_us(parse_job_key(j.key));
      w.put_raw("jobs", j.key, serialize_job(j));
    }
    Job done;
    done.key = key(7);
    done.state = JobState::done;
    w.put_raw("jobs", done.key, serialize_job(done));
    w.put_raw("jobs", key(8), "{damaged");
  }
  JobQueue q(dir.path());
  for (int i = 0; i < 500 && q.indexing(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(q.indexing());
  EXPECT_EQ(q.counts().of(JobState::queued), 3u);
  EXPECT_EQ(q.counts().of(JobState::done), 1u);
  EXPECT_EQ(q.counts().unreadable, 1u);
  EXPECT_EQ(q.claim_next([](const Job&) { return true; })->key, key(16));
  EXPECT_EQ(q.claim_next([](const Job&) { return true; })->key, key(4096));
  // A miss overwrites the damaged record with a job: it is counted as a job now.
  misses_sync(q, {{key(8), 1}});
  EXPECT_EQ(q.counts().unreadable, 0u);
  EXPECT_EQ(q.counts().of(JobState::queued), 2u);
}

// The index scan in steps with changes between them, on both sides of its position: the counts
// it ends with are those a scan in one go finds, and a job a dead daemon left running is queued.
TEST(JobCounts, ChangesBetweenIndexStepsAreCountedOnce) {
  test::TempDir dir;
  CacheWriter w(dir.path());
  const auto job = [](int n, JobState s) {
    Job j;
    j.key = key(n);
    j.state = s;
    j.est_call_us = 1;
    return j;
  };
  w.write_records([&](const lmdb::Txn& txn) {
    for (int n = 1; n <= 8; ++n)
      lmdb::put(txn, open_job_dbs(txn).jobs, key(n), serialize_job(job(n, n == 7 ? JobState::running : JobState::queued)));
    return false;
  });
  QueueCounts counts;
  std::optional<std::string> scan;
  const auto in_txn = [&](const std::function<void(JobTxn&)>& body) {
    w.write_records([&](const lmdb::Txn& txn) {
      const auto dbs = open_job_dbs(txn);
      JobTxn jt(txn, dbs, counts, scan);
      body(jt);
      jt.write_counts();
      counts = jt.counts();
      scan = jt.scan_position();
      return false;
    });
  };
  w.write_records([&](const lmdb::Txn& txn) {
    counts = start_index_scan(txn, open_job_dbs(txn));
    scan = std::string();
    return false;
  });
  // Keys sort as "...n=1 ", "...n=2 ", ...: two steps index key(1) to key(4).
  in_txn([](JobTxn& jt) { EXPECT_FALSE(jt.index_step(2)); });
  in_txn([](JobTxn& jt) { EXPECT_FALSE(jt.index_step(2)); });
  in_txn([&](JobTxn& jt) {
    Job j = *jt.get(key(2));  // indexed: moves from queued to cancelled
    j.state = JobState::cancelled;
    jt.put(j, jt.get(key(2)));
    Job k = *jt.get(key(6));  // not indexed yet: changed twice before the scan gets there
    k.state = JobState::failed;
    jt.put(k, jt.get(key(6)));
    k.state = JobState::done;
    jt.put(k, jt.get(key(6)));
    jt.erase(*jt.get(key(5)));  // not indexed yet: nothing counted to take away
    jt.put(job(9, JobState::queued), std::nullopt);
  });
  in_txn([](JobTxn& jt) {
    while (!jt.index_step(1)) {
    }
  });
  EXPECT_FALSE(scan.has_value());
  w.write_records([&](const lmdb::Txn& txn) {
    const auto dbs = open_job_dbs(txn);
    const auto stored = stored_counts(txn, dbs);
    EXPECT_TRUE(stored.has_value()) << "the counts match the index and the jobs";
    EXPECT_EQ(stored.value_or(QueueCounts{}), counts);
    EXPECT_EQ(get_job(txn, dbs, key(7))->state, JobState::queued);
    EXPECT_EQ(rebuild_index(txn, dbs), counts);
    return false;
  });
  EXPECT_EQ(counts.of(JobState::queued), 6u);  // 1, 3, 4, 7 (resumed), 8 and 9
  EXPECT_EQ(counts.of(JobState::cancelled), 1u);
  EXPECT_EQ(counts.of(JobState::done), 1u);
  EXPECT_EQ(counts.of(JobState::failed), 0u);
  EXPECT_EQ(counts.total(), 8u);
}

TEST(JobBound, ANewJobBeyondTheBoundDisplacesALowerOneOrIsRefused) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{3});
  misses_sync(q, {{key(64), 10}, {key(65), 20}, {key(66), 30}});
  misses_sync(q, {{key(67), 100}});  // outranks key(64): takes its place
  EXPECT_FALSE(q.find(key(64)).has_value());
  EXPECT_TRUE(q.find(key(67)).has_value());
  misses_sync(q, {{key(68), 1}});  // below every queued job: refused
  EXPECT_FALSE(q.find(key(68)).has_value());
  misses_sync(q, {{key(65), 5}});  // known keys still count
  EXPECT_EQ(q.find(key(65))->count, 25u);
  EXPECT_EQ(q.counts().of(JobState::queued), 3u);
  EXPECT_EQ(q.tallies().jobs_dropped, 2u);

  const auto refused = prewarm_sync(q, {{key(69), "", {}}});  // one call: the lowest priority
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key, key(69));
  EXPECT_NE(refused[0].message.find("max_queued_jobs = 3"), std::string::npos);
  EXPECT_EQ(q.counts().of(JobState::queued), 3u);
}

TEST(JobBound, PrewarmOfACachedKeyWithoutAJobIsDone) {
  test::TempDir dir;
  JobQueue q(dir.path());
  q.commit_winner(key(5), record(5, 100));  // no job: as after its job was purged
  EXPECT_TRUE(prewarm_sync(q, {{key(5), "", {}}}).empty());
  EXPECT_EQ(q.find(key(5))->state, JobState::done);
  EXPECT_EQ(q.counts().of(JobState::queued), 0u);
}

TEST(JobPurge, RemovesFinishedJobsByStateAndAgeWithTheirUnpublishedTrees) {
  test::TempDir dir;
  JobQueue q(dir.path());
  misses_sync(q, {{key(1), 1}, {key(2), 1}, {key(3), 1}, {key(4), 1}});
  cancel_sync(q, key(1));
  q.update(key(2), [](Job& j) { j.state = JobState::failed; });
  q.store_tree("search-3", "{}");
  q.update(key(3), [](Job& j) {
    j.state = JobState::done;  // searched, nothing published: no record cites its tree
    j.search_id = "search-3";
  });
  const auto now = unix_ms_now();

  PurgeRequest old;
  old.before_unix_ms = now - 3600 * 1000;  // nothing is an hour old
  EXPECT_EQ(q.purge(old).total(), 0u);

  PurgeRequest count;
  count.before_unix_ms = now + 1000;
  count.mode = PurgeRequest::Mode::count_only;
  EXPECT_EQ(q.purge(count).total(), 3u);
  EXPECT_EQ(q.counts().total(), 4u);  // counting changed nothing

  PurgeRequest failed_only;
  failed_only.states = {JobState::failed, JobState::queued};  // queued is never purged
  failed_only.before_unix_ms = now + 1000;
  const PurgeResult r = q.purge(failed_only);
  EXPECT_EQ(r.total(), 1u);
  EXPECT_EQ(r.by_state[static_cast<std::size_t>(JobState::failed)], 1u);
  EXPECT_FALSE(q.find(key(2)).has_value());

  PurgeRequest all;
  all.before_unix_ms = now + 1000;
  EXPECT_EQ(q.purge(all).total(), 2u);
  EXPECT_EQ(q.counts().total(), 1u);
  EXPECT_EQ(q.counts().of(JobState::queued), 1u);
  EXPECT_EQ(q.tallies().jobs_purged, 3u);
  q.stop();
  CacheWriter w(dir.path());
  EXPECT_FALSE(w.get_raw("trees", "search-3").has_value());
}

TEST(JobPurge, RemovesMoreThanOneBatch) {
  test::TempDir dir;
  JobQueue q(dir.path());
  std::vector<MissReport> misses;
  const int n = static_cast<int>(JobQueue::kPurgeBatch) * 2 + 7;
  for (int i = 1; i <= n; ++i) misses.push_back({key(i), 1});
  misses_sync(q, misses);
  for (int i = 1; i <= n; ++i) q.cancel(key(i), [](const CommitResult&, bool) {});
  PurgeRequest all;
  all.before_unix_ms = unix_ms_now() + 1000;
  EXPECT_EQ(q.purge(all).total(), static_cast<std::uint64_t>(n));
  EXPECT_EQ(q.counts().total(), 0u);
}

TEST(Usage, NotesAreStoredOnlyForRecordsAndOnlyMoveForward) {
  test::TempDir dir;
  JobQueue q(dir.path());
  q.commit_winner(key(1), record(1, 10));
  q.note_usage({key(1), key(2)}, 5000);  // key(2) has no record
  q.flush_usage();
  q.note_usage({key(1)}, 4000);  // older than what is stored
  q.flush_usage();
  q.stop();
  CacheWriter w(dir.path());
  const auto used = w.get_raw(kUsageDb, key(1));
  ASSERT_TRUE(used.has_value());
  EXPECT_GE(decode_usage(*used).value_or(0), unix_ms_now() - 60000);  // the publication's time
  EXPECT_FALSE(w.get_raw(kUsageDb, key(2)).has_value());
}

TEST(Eviction, LeastRecentlyUsedRecordsGoFirstWithTheirJobsAndTrees) {
  test::TempDir dir;
  JobQueue q(dir.path());
  constexpr std::size_t kRecordBytes = 64 * 1024;
  for (int n = 1; n <= 8; ++n) {
    misses_sync(q, {{key(n), 1}});
    q.store_tree("search-" + std::to_string(n), "{}");
    q.commit_winner(key(n), record(n, kRecordBytes, "search-" + std::to_string(n)));
  }
  q.flush_usage();  // every record used at its publication
  const auto now = unix_ms_now();
  q.note_usage({key(3)}, now + 2000);  // hit since: the most recent two
  q.note_usage({key(6)}, now + 3000);
  q.flush_usage();
  const std::uint64_t all = q.records_bytes();
  EXPECT_EQ(q.evict_lru(all, all / 2).records, 0u);  // not over the limit: nothing goes

  const auto generation = q.generation();
  std::vector<std::uint64_t> batches;
  const EvictionResult r =
      q.evict_lru(all / 2, kRecordBytes * 5 / 2, [&](std::uint64_t g, std::uint64_t) { batches.push_back(g); });
  EXPECT_GT(r.records, 0u);
  EXPECT_LE(r.bytes_after, kRecordBytes * 5 / 2);
  EXPECT_GT(q.generation(), generation);
  EXPECT_EQ(batches.back(), q.generation());
  EXPECT_EQ(q.tallies().records_evicted, r.records);
  q.stop();

  CacheWriter w(dir.path());
  std::set<std::string> left;
  for (const auto& [k, v] : w.scan_raw("records")) left.insert(k);
  EXPECT_TRUE(left.count(key(3)) && left.count(key(6))) << "the recently used records stay";
  EXPECT_EQ(left.size(), 8 - r.records);
  for (int n = 1; n <= 8; ++n) {
    const bool kept = left.count(key(n)) > 0;
    EXPECT_EQ(w.get_raw("trees", "search-" + std::to_string(n)).has_value(), kept) << n;
    EXPECT_EQ(w.get_raw(kUsageDb, key(n)).has_value(), kept) << n;
    EXPECT_EQ(w.get_raw("jobs", key(n)).has_value(), kept) << n;  // a later miss queues it afresh
  }
}

// A smaller version of the 1,000,000-job benchmark (bench_daemon_jobs): reopening and status read
// no job, and the index answers what status and the scheduler ask.
TEST(JobCounts, FiftyThousandJobsReopenWithTheirCounts) {
  test::TempDir dir;
  constexpr int kJobs = 50000, kCancelled = 30000;
  {
    JobQueue q(dir.path());
    std::vector<MissReport> misses;
    for (int i = 1; i <= kJobs; ++i) misses.push_back({key(i), static_cast<std::uint64_t>(i)});
    misses_sync(q, misses);
    std::promise<void> last;
    for (int i = 1; i <= kCancelled; ++i)
      q.cancel(key(i), [&, i](const CommitResult&, bool) {
        if (i == kCancelled) last.set_value();
      });
    last.get_future().wait();
  }
  JobQueue q(dir.path());
  EXPECT_EQ(q.counts().of(JobState::queued), static_cast<std::uint64_t>(kJobs - kCancelled));
  EXPECT_EQ(q.counts().of(JobState::cancelled), static_cast<std::uint64_t>(kCancelled));
  const auto top = q.top_jobs(20);
  ASSERT_EQ(top.size(), 20u);
  EXPECT_EQ(top[0].state, JobState::queued);
  for (std::size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].priority(), top[i].priority());
  const auto best = q.claim_next([](const Job&) { return true; });
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->key, top[0].key);
}

}  // namespace
}  // namespace kd::daemon
