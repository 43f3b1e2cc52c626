// The daemon's housekeeping pass (sched/maintenance.hpp) on a real cache: usage stored, expired
// finished jobs purged, records evicted down to 90% of max_cache_bytes with a notice per batch,
// and purges requested by operators run on its thread.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "sched/maintenance.hpp"
#include "store/record_usage.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::string key(int n) {
  return "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=" + std::to_string(n) +
         " n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 "
         "gpu=\"NVIDIA H200\" sms=132";
}

Config config(std::uint64_t max_cache_bytes, std::chrono::seconds retention) {
  Config c;
  c.max_cache_bytes = max_cache_bytes;
  c.job_retention = retention;
  c.max_queued_jobs = 1000;
  c.maintenance_interval = std::chrono::milliseconds(20);
  return c;
}

TEST(Maintenance, APassStoresUsageEvictsDownToNinetyPercentAndNotifies) {
  test::TempDir dir;
  JobQueue q(dir.path());
  for (int n = 1; n <= 10; ++n) {
    Record r;
    r.key_line = key(n);
    r.cubin = std::string(32 * 1024, 'k');
    q.commit_winner(key(n), r);
  }
  const std::uint64_t limit = q.records_bytes() / 2;
  const Config c = config(limit, std::chrono::seconds(0));
  std::uint64_t notices = 0, evicted = 0;
  Maintenance m(c, q, [&](std::uint64_t, std::uint64_t records) {
    ++notices;
    evicted += records;
  });
  q.note_usage({key(10)}, unix_ms_now() + 10000);
  const auto pass = m.run_pass();
  EXPECT_GT(pass.evicted.records, 0u);
  EXPECT_EQ(evicted, pass.evicted.records);
  EXPECT_GE(notices, 1u);
  EXPECT_LE(q.records_bytes(), limit / 100 * Maintenance::kEvictTargetPercent);
  EXPECT_EQ(m.run_pass().evicted.records, 0u);  // under the limit now
  q.stop();
  CacheWriter w(dir.path());
  EXPECT_TRUE(w.get_raw("records", key(10)).has_value()) << "the record used last stays";
}

TEST(Maintenance, ThePeriodicPassPurgesExpiredJobsAndOperatorPurgesRunOnItsThread) {
  test::TempDir dir;
  JobQueue q(dir.path());
  std::promise<CommitResult> p;
  q.report_misses({{key(1), 1}, {key(2), 1}, {key(3), 1}}, [&](const CommitResult& r) { p.set_value(r); });
  ASSERT_TRUE(p.get_future().get().committed);
  q.update(key(1), [](Job& j) { j.state = JobState::failed; });
  q.update(key(2), [](Job& j) { j.state = JobState::done; });
  const Config c = config(0, std::chrono::seconds(1));
  Maintenance m(c, q, {});
  m.start();
  for (int i = 0; i < 300 && q.counts().total() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q.counts().total(), 1u);  // the two finished jobs, a second after they finished
  EXPECT_EQ(q.counts().of(JobState::queued), 1u);

  q.update(key(3), [](Job& j) { j.state = JobState::cancelled; });
  PurgeRequest now;
  now.before_unix_ms = unix_ms_now() + 1000;
  std::promise<std::optional<PurgeResult>> purged;
  m.purge(now, [&](const std::optional<PurgeResult>& r, const std::string&) { purged.set_value(r); });
  const auto r = purged.get_future().get();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->total(), 1u);
  m.stop();
  std::promise<std::string> late;
  m.purge(now, [&](const std::optional<PurgeResult>&, const std::string& why) { late.set_value(why); });
  EXPECT_NE(late.get_future().get().find("shutting down"), std::string::npos);
}

}  // namespace
}  // namespace kd::daemon
