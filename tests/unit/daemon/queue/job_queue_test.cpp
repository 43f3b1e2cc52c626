// The job queue in-process: records, deduplication, resume, claiming, cancel, backoff, meta values.
#include <gtest/gtest.h>

#include <future>

#include "job_queue_sync.hpp"
#include "queue/job_queue.hpp"
#include "sched/scheduler.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::string key(int n) { return test::job_key(n); }
using test::misses_sync;

TEST(Job, SerializeRoundTripsEveryField) {
  Job j;
  j.key = key(1);
  j.state = JobState::failed;
  j.count = 12;
  j.est_call_us = 3.5;
  j.attempts = 2;
  j.created_unix_ms = 111;
  j.updated_unix_ms = 222;
  j.not_before_unix_ms = 333;
  j.reason = "worker lost";
  j.proposer = "llm";
  j.budgets = {1, 2, 3, 4};
  j.published_generation = 9;
  j.origin = JobOrigin::prewarm;
  const auto back = parse_job(j.key, serialize_job(j));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, j);
  EXPECT_FALSE(parse_job("k", "{\"schema\":99}").has_value());
  EXPECT_FALSE(parse_job("k", "not json").has_value());
}

TEST(Job, PriorityGrowsWithCallsAndShapeSize) {
  EXPECT_GT(estimate_call_us(parse_job_key(key(4096))), estimate_call_us(parse_job_key(key(16))));
  EXPECT_EQ(estimate_call_us(parse_job_key("not a key")), 0);
  Job a, b;
  a.est_call_us = b.est_call_us = 2;
  a.count = 10;
  b.count = 0;  // a prewarmed key counts as one call
  EXPECT_EQ(a.priority(), 20);
  EXPECT_EQ(b.priority(), 2);
}

TEST(JobQueue, MetaValuesCommitWithTheGroupAndPersist) {
  test::TempDir dir;
  {
    JobQueue q(dir.path());
    EXPECT_FALSE(q.get_meta("client_stats").has_value());
    std::promise<CommitResult> first, second;
    q.put_meta("client_stats", "one", [&](const CommitResult& r) { first.set_value(r); });
    q.put_meta("client_stats", "two", [&](const CommitResult& r) { second.set_value(r); });
    misses_sync(q, {{key(7), 1}});
    EXPECT_TRUE(first.get_future().get().committed);
    EXPECT_TRUE(second.get_future().get().committed);
    EXPECT_EQ(q.get_meta("client_stats"), "two");  // the later value wins
  }
  JobQueue again(dir.path());
  EXPECT_EQ(again.get_meta("client_stats"), "two");
  EXPECT_TRUE(again.find(key(7)).has_value());
  EXPECT_EQ(again.generation(), 0u);  // the cache's own meta keys are untouched
}

TEST(JobQueue, MissesDeduplicateAndPersist) {
  test::TempDir dir;
  {
    JobQueue q(dir.path());
    misses_sync(q, {{key(1), 2}, {key(2), 1}, {key(1), 3}});
    misses_sync(q, {{key(1), 1}});
    ASSERT_TRUE(q.find(key(1)).has_value());
    EXPECT_EQ(q.find(key(1))->count, 6u);
    EXPECT_EQ(q.counts().by_state[0], 2u);
  }
  JobQueue reopened(dir.path());
  EXPECT_EQ(reopened.find(key(1))->count, 6u);
  EXPECT_EQ(reopened.find(key(2))->count, 1u);
}

TEST(JobQueue, RunningJobsResumeOnReopen) {
  test::TempDir dir;
  {
    JobQueue q(dir.path());
    misses_sync(q, {{key(1), 1}});
    const auto claimed = q.claim_next([](const Job&) { return true; });
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(claimed->state, JobState::running);
    EXPECT_EQ(claimed->attempts, 1u);
  }  // as if the daemon died while searching
  JobQueue reopened(dir.path());
  const auto job = reopened.find(key(1));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, JobState::queued);
  EXPECT_NE(job->reason.find("resumed"), std::string::npos);
}

TEST(JobQueue, ClaimsHighestPriorityEligibleJob) {
  test::TempDir dir;
  JobQueue q(dir.path());
  misses_sync(q, {{key(16), 1000}, {key(4096), 1}, {key(64), 1}});
  // key(16) x 1000 calls outweighs one call of the larger shapes.
  EXPECT_EQ(q.claim_next([](const Job&) { return true; })->key, key(16));
  EXPECT_EQ(q.claim_next([](const Job& j) { return j.key != key(4096); })->key, key(64));
  EXPECT_FALSE(q.claim_next([](const Job& j) { return j.key != key(4096); }).has_value());
  EXPECT_EQ(q.claim_next([](const Job&) { return true; })->key, key(4096));
}

// A key is parsed once: a new job keeps the parse its miss brought (the server's), and a job
// stored before the queue opened is parsed at its first claim; later claims parse nothing.
TEST(JobQueue, ClaimsCarryTheParseTheJobWasQueuedWith) {
  test::TempDir dir;
  const ParsedKey brought = parse_job_key(key(16));
  ASSERT_TRUE(brought.key);
  {
    JobQueue q(dir.path());
    misses_sync(q, {{key(16), 1, brought}});
    const GemmKey* seen = nullptr;
    const auto claimed = q.claim_next([&](const Job& j) {
      seen = j.parsed.key.get();
      return true;
    });
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(seen, brought.key.get()) << "eligible() sees the miss's parse";
    EXPECT_EQ(claimed->parsed.key.get(), brought.key.get()) << "the claimed job carries it";
    EXPECT_EQ(claimed->est_call_us, estimate_call_us(brought));
    EXPECT_GT(claimed->est_call_us, 0.0);
  }
  JobQueue reopened(dir.path());  // the job is queued again ("resumed"), without a parse in memory
  const auto first = reopened.claim_next([](const Job&) { return true; });
  ASSERT_TRUE(first.has_value() && first->parsed.key);
  EXPECT_EQ(first->parsed, brought);
  EXPECT_NE(first->parsed.key.get(), brought.key.get());
  reopened.update(key(16), [](Job& j) { j.state = JobState::queued; });
  const auto second = reopened.claim_next([](const Job&) { return true; });
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->parsed.key.get(), first->parsed.key.get()) << "parsed again at the second claim";
}

TEST(ParsedKeys, RemembersEachLineOnceWithinItsCapacity) {
  ParsedKeys parses(2);
  const ParsedKey brought = parse_job_key(key(1));
  EXPECT_EQ(parses.of(key(1), brought).key.get(), brought.key.get());
  EXPECT_EQ(parses.of(key(1)).key.get(), brought.key.get());
  const GemmKey* two = parses.of(key(2)).key.get();
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(parses.of(key(2)).key.get(), two);
  EXPECT_FALSE(parses.of("gemm m=banana").key) << "a line that does not parse has no parse";
  EXPECT_EQ(estimate_call_us(ParsedKey{}), 0.0);
}

TEST(JobQueue, CancelAndPrewarmRequeue) {
  test::TempDir dir;
  JobQueue q(dir.path());
  std::promise<bool> found;
  q.prewarm({{key(1), "builtin", {}}}, [](const CommitResult&, const std::vector<Refused>&) {});
  q.cancel(key(1), [&](const CommitResult&, bool f) { found.set_value(f); });
  EXPECT_TRUE(found.get_future().get());
  EXPECT_EQ(q.find(key(1))->state, JobState::cancelled);
  std::promise<CommitResult> again;
  q.prewarm({{key(1), "llm", {5, 0, 0, 0}}},
            [&](const CommitResult& r, const std::vector<Refused>&) { again.set_value(r); });
  ASSERT_TRUE(again.get_future().get().committed);
  EXPECT_EQ(q.find(key(1))->state, JobState::queued);
  EXPECT_EQ(q.find(key(1))->proposer, "llm");
  EXPECT_EQ(q.find(key(1))->budgets.rounds, 5u);
}

TEST(JobQueue, StoppedQueueRefusesChanges) {
  test::TempDir dir;
  JobQueue q(dir.path());
  q.stop();
  std::promise<CommitResult> p;
  q.report_misses({{key(1), 1}}, [&](const CommitResult& r) { p.set_value(r); });
  EXPECT_FALSE(p.get_future().get().committed);
}

TEST(Scheduler, BackoffDoublesAndCaps) {
  using std::chrono::milliseconds;
  EXPECT_EQ(Scheduler::backoff(milliseconds(100), 1), milliseconds(100));
  EXPECT_EQ(Scheduler::backoff(milliseconds(100), 2), milliseconds(200));
  EXPECT_EQ(Scheduler::backoff(milliseconds(100), 4), milliseconds(800));
  EXPECT_EQ(Scheduler::backoff(milliseconds(100), 50), milliseconds(6400));
}

}  // namespace
}  // namespace kd::daemon
