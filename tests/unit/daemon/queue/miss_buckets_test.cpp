// Issue 29: an application's miss for an untuned n queues its bucket's range, one job per bucket;
// a finished bucket whose record is gone is searched again as a whole; prewarm keys are queued as
// given, and a prewarm of a done key whose record is gone searches it again.
#include "queue/miss_buckets.hpp"

#include <gtest/gtest.h>

#include <future>

#include "queue/job_queue.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::string key(const std::string& n, const std::string& tb = "N", const std::string& ldb = "4096") {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=" + tb + " m=4096 n=" + n + " k=4096 lda=4096 ldb=" + ldb +
         " ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

void misses_sync(JobQueue& q, std::vector<MissReport> m) {
  std::promise<CommitResult> p;
  q.report_misses(std::move(m), [&](const CommitResult& r) { p.set_value(r); });
  ASSERT_TRUE(p.get_future().get().committed);
}

TEST(MissBuckets, BucketLineOfAMiss) {
  const NBuckets& d = NBuckets::standard();
  EXPECT_EQ(bucket_line(key("40"), d), key("33..64"));
  EXPECT_EQ(bucket_line(key("64"), d), key("33..64"));
  EXPECT_EQ(bucket_line(key("3000"), d), key("2049..4096"));
  EXPECT_EQ(bucket_line(key("2"), d), std::nullopt) << "alone in its bucket";
  EXPECT_EQ(bucket_line(key("20000"), d), std::nullopt) << "above the last edge";
  EXPECT_EQ(bucket_line(key("33..64"), d), std::nullopt) << "already a range";
  EXPECT_EQ(bucket_line(key("40", "T", "40"), d), std::nullopt) << "ldb = n ties the key to its n";
  EXPECT_EQ(bucket_line(key("40"), std::get<NBuckets>(NBuckets::parse("off"))), std::nullopt);
  EXPECT_EQ(bucket_line("not a key", d), std::nullopt);
  // A shape line (a daemon with GPUs of several models) gets a shape line's bucket.
  const std::string shape = "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=200 k=768 lda=768 ldb=768 "
                            "ldc=768 batch=1 epilogue=none beta0=1";
  EXPECT_EQ(bucket_line(shape, d), "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=129..256 k=768 lda=768 "
                                   "ldb=768 ldc=768 batch=1 epilogue=none beta0=1");
}

TEST(MissBuckets, MissesOfOneBucketAreOneJob) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  misses_sync(q, {{key("40"), 2}, {key("50"), 1}, {key("64"), 4}, {key("100"), 1}, {key("2"), 1}});
  ASSERT_TRUE(q.find(key("33..64")));
  EXPECT_EQ(q.find(key("33..64"))->count, 7u);
  EXPECT_TRUE(q.find(key("65..128")));
  EXPECT_TRUE(q.find(key("2")));
  EXPECT_FALSE(q.find(key("40")));
  EXPECT_EQ(q.counts().by_state[static_cast<std::size_t>(JobState::queued)], 3u);
}

// A finished bucket whose record is gone (evicted, or searched without a winner before vendor
// verdicts) is searched again as one job when its calls miss, never one n at a time.
TEST(MissBuckets, ABucketWhoseRecordIsGoneIsSearchedAgainAsOneJob) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  misses_sync(q, {{key("40"), 1}});
  q.update(key("33..64"), [](Job& j) {
    j.state = JobState::done;
    j.reason = "no range winner";
  });
  misses_sync(q, {{key("40"), 1}, {key("41"), 1}});
  EXPECT_FALSE(q.find(key("40")));
  EXPECT_FALSE(q.find(key("41")));
  ASSERT_TRUE(q.find(key("33..64")));
  EXPECT_EQ(q.find(key("33..64"))->state, JobState::queued);
  EXPECT_EQ(q.find(key("33..64"))->count, 3u);
  EXPECT_TRUE(q.find(key("33..64"))->reason.empty());
}

// A done job whose record is in the cache only counts its misses; a shape line (no device part)
// cannot tell whether its records are gone, so it stays done too.
TEST(MissBuckets, ADoneJobWithItsRecordOrWithoutADeviceStaysDone) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  const std::string shape = "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=2 k=768 lda=768 ldb=768 "
                            "ldc=768 batch=1 epilogue=none beta0=1";
  misses_sync(q, {{key("2"), 1}, {shape, 1}});
  Record r;
  r.key_line = key("2");
  r.kind = RecordKind::vendor;
  q.commit_winner(key("2"), r, "kept cuBLAS");
  q.update(shape, [](Job& j) { j.state = JobState::done; });
  misses_sync(q, {{key("2"), 4}, {shape, 1}});
  EXPECT_EQ(q.find(key("2"))->state, JobState::done);
  EXPECT_EQ(q.find(key("2"))->count, 5u);
  EXPECT_EQ(q.find(shape)->state, JobState::done);
}

TEST(MissBuckets, APrewarmOfADoneKeySearchesItAgainOnlyWhenItsRecordIsGone) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  const auto prewarm_sync = [&](const std::string& k) {
    std::promise<CommitResult> done;
    q.prewarm({{k, "", {}}}, [&](const CommitResult& r, const std::vector<Refused>&) { done.set_value(r); });
    ASSERT_TRUE(done.get_future().get().committed);
  };
  prewarm_sync(key("65..128"));
  prewarm_sync(key("129..256"));
  Record r;
  r.key_line = key("65..128");
  r.kind = RecordKind::vendor;
  q.commit_winner(key("65..128"), r, "kept cuBLAS");
  q.update(key("129..256"), [](Job& j) { j.state = JobState::done; });  // its record evicted since
  prewarm_sync(key("65..128"));
  prewarm_sync(key("129..256"));
  EXPECT_EQ(q.find(key("65..128"))->state, JobState::done);
  EXPECT_EQ(q.find(key("129..256"))->state, JobState::queued);
}

// A daemon whose search is newer than a verdict's searches its key again; the verdict stays.
TEST(MissBuckets, VerdictsOfAnOlderSearchAreQueuedAgain) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  Record old_verdict, current;
  old_verdict.key_line = key("65..128");
  old_verdict.kind = current.kind = RecordKind::vendor;
  old_verdict.search_version = 1;
  current.key_line = key("129..256");
  current.search_version = 2;
  q.commit_winner(key("65..128"), old_verdict, "kept cuBLAS");
  q.commit_winner(key("129..256"), current, "kept cuBLAS");
  EXPECT_EQ(q.requeue_stale_verdicts(2), 1u);
  EXPECT_EQ(q.find(key("65..128"))->state, JobState::queued);
  EXPECT_EQ(q.find(key("65..128"))->origin, JobOrigin::miss);
  EXPECT_NE(q.find(key("65..128"))->reason.find("older search"), std::string::npos);
  EXPECT_FALSE(q.find(key("129..256")));  // never a job of its own here, and current
  EXPECT_EQ(q.requeue_stale_verdicts(2), 0u) << "queued already";
}

TEST(MissBuckets, PrewarmQueuesKeysAsGiven) {
  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  std::promise<CommitResult> done;
  q.prewarm({{key("40"), "", {}}, {key("65..96"), "", {}}},
            [&](const CommitResult& r, const std::vector<Refused>&) { done.set_value(r); });
  ASSERT_TRUE(done.get_future().get().committed);
  EXPECT_TRUE(q.find(key("40")));
  EXPECT_TRUE(q.find(key("65..96")));
  EXPECT_FALSE(q.find(key("33..64")));
}

}  // namespace
}  // namespace kd::daemon

namespace kd::daemon {
namespace {

// Issue 33: a row operator's key has no n: its misses are one exact job whatever the buckets, its
// parse is kept for the claim, and its nominal call time is its bytes at kNominalTBps.
TEST(MissBuckets, RowOperatorMissesStayExactJobs) {
  const std::string row = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1 arch=sm_90 "
                          "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
  EXPECT_EQ(bucket_line(row, NBuckets::standard()), std::nullopt);
  const ParsedKey parsed = parse_job_key(row);
  ASSERT_TRUE(parsed.row && !parsed.key);
  EXPECT_EQ(parsed.full_line_on({"sm_90", "NVIDIA H100 80GB HBM3", 132}), row);
  // x read and y written (4096 x 1024 f32 each), weight and bias read (1024 f32 each).
  EXPECT_DOUBLE_EQ(estimate_call_us(parsed), (2.0 * 4096 * 1024 * 4 + 2 * 1024 * 4) / (kNominalTBps * 1e6));

  test::TempDir dir;
  JobQueue q(dir.path(), QueueLimits{100000, NBuckets::standard()});
  misses_sync(q, {{row, 2, parsed}, {row, 3}});
  const auto job = q.find(row);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->count, 5u);
  EXPECT_GT(job->est_call_us, 0.0);
  EXPECT_EQ(q.counts().by_state[static_cast<std::size_t>(JobState::queued)], 1u);
}

}  // namespace
}  // namespace kd::daemon
