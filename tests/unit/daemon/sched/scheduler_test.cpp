// The scheduler with scripted runners (test doubles of the future search): publishing, device
// matching, retries after lost workers, stopping, and the vendor verdict a search without a
// winner leaves.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <future>
#include <thread>

#include "sched/scheduler.hpp"
#include "store/cache_store.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};

std::string key(int n, const std::string& gpu = "NVIDIA H100 80GB HBM3") {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"" + gpu +
         "\" sms=132";
}

// Returns the scripted outcomes in order, then blocks until stopped.
class ScriptedRunner final : public JobRunner {
public:
  explicit ScriptedRunner(std::deque<JobOutcome> script) : script_(std::move(script)) {}
  DevicePart device() const override { return kH100; }
  JobOutcome run(const Job& job, const Budgets& budgets, Progress& progress,
                 std::stop_token stop) override {
    seen.push_back(job.key);
    seen_budgets.push_back(budgets);
    if (!script_.empty()) {
      auto o = std::move(script_.front());
      script_.pop_front();
      progress.candidate_evaluated();
      progress.candidate_rejected("numerics");
      return o;
    }
    while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return JobOutcome{JobOutcome::Kind::stopped, std::nullopt, "stopped"};
  }
  std::vector<std::string> seen;
  std::vector<Budgets> seen_budgets;

private:
  std::deque<JobOutcome> script_;
};

Config test_config() {
  Config c;
  c.budgets = {8, 256, 600, 1000};
  c.restart_backoff = std::chrono::milliseconds(1);
  c.max_attempts = 2;
  return c;
}

using test::eventually;

std::vector<std::unique_ptr<JobRunner>> one_runner(std::unique_ptr<JobRunner> runner) {
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::move(runner));
  return runners;
}

// A temporary cache with its job queue and metrics, under test_config().
class SchedulerTest : public ::testing::Test {
protected:
  test::TempDir dir;
  const Config config = test_config();
  JobQueue queue{dir.path()};
  Metrics metrics;
};

TEST_F(SchedulerTest, PublishesAWinnerAndNotifies) {
  Record winner;
  winner.key_line = key(16);
  winner.proposer = "builtin";
  std::deque<JobOutcome> script;
  script.push_back({JobOutcome::Kind::winner, winner, ""});
  auto runner = std::make_unique<ScriptedRunner>(std::move(script));
  auto* raw = runner.get();
  std::atomic<std::uint64_t> notified{0};
  Scheduler s(config, queue, metrics, one_runner(std::move(runner)),
              [&](const std::string& k, std::uint64_t g) {
                if (k == key(16)) notified = g;
              });
  queue.report_misses({{key(16), 3}, {key(32, "NVIDIA A100-SXM4-80GB"), 100}}, [](const CommitResult&) {});
  s.start();
  ASSERT_TRUE(eventually([&] { return notified.load() == 1; }));
  EXPECT_EQ(queue.find(key(16))->state, JobState::done);
  EXPECT_EQ(queue.find(key(16))->published_generation, 1u);
  EXPECT_EQ(queue.generation(), 1u);
  EXPECT_EQ(metrics.get(Counter::winners_published), 1u);
  EXPECT_EQ(metrics.rejected().at("numerics"), 1u);
  s.stop();
  // The A100 key was never given to the H100 runner, despite its higher priority.
  for (const auto& k : raw->seen) EXPECT_EQ(k, key(16));
  EXPECT_EQ(queue.find(key(32, "NVIDIA A100-SXM4-80GB"))->state, JobState::queued);
  EXPECT_EQ(raw->seen_budgets.at(0).rounds, 8u);
}

// A bucket whose search kept cuBLAS gets a vendor verdict record under the bucket's line, and
// later misses of its n count for the finished bucket instead of each queuing a search of its own.
TEST(SchedulerVerdict, ABucketThatKeptTheVendorGetsAVerdictAndItsNAreNotSearchedAlone) {
  test::TempDir dir;
  JobQueue queue(dir.path(), QueueLimits{100000, NBuckets::standard()});
  Metrics metrics;
  std::string bucket = key(20);
  bucket.replace(bucket.find(" n=20 "), 6, " n=17..32 ");
  JobOutcome kept{JobOutcome::Kind::no_improvement, std::nullopt, "no range winner: lost at n=32"};
  kept.best_us = 12.0;
  kept.baseline_us = 10.0;
  kept.search_id = "s-test";
  std::deque<JobOutcome> script;
  script.push_back(kept);
  auto runner = std::make_unique<ScriptedRunner>(std::move(script));
  auto* raw = runner.get();
  std::atomic<std::uint64_t> notified{0};
  Scheduler s(test_config(), queue, metrics, one_runner(std::move(runner)),
              [&](const std::string& k, std::uint64_t g) {
                if (k == bucket) notified = g;
              });
  queue.report_misses({{key(20), 1}}, [](const CommitResult&) {});
  s.start();
  ASSERT_TRUE(eventually([&] { return notified.load() == 1; }));
  CacheReader reader(dir.path());
  reader.refresh();
  const auto found = reader.lookup(bucket);
  ASSERT_TRUE(std::holds_alternative<Record>(found));
  const Record& verdict = std::get<Record>(found);
  EXPECT_EQ(verdict.kind, RecordKind::vendor);
  EXPECT_EQ(verdict.candidate_us, 12.0);
  EXPECT_EQ(verdict.baseline_us, 10.0);
  EXPECT_EQ(verdict.idea, "no range winner: lost at n=32");
  EXPECT_EQ(verdict.search_id, "s-test");
  EXPECT_EQ(queue.find(bucket)->state, JobState::done);
  EXPECT_EQ(queue.find(bucket)->reason, "no range winner: lost at n=32");
  EXPECT_EQ(metrics.get(Counter::vendor_verdicts), 1u);
  EXPECT_EQ(metrics.get(Counter::winners_published), 0u);

  std::promise<void> counted;
  queue.report_misses({{key(25), 2}}, [&](const CommitResult&) { counted.set_value(); });
  counted.get_future().wait();
  EXPECT_FALSE(queue.find(key(25))) << "an n of a bucket with a verdict is not searched alone";
  EXPECT_EQ(queue.find(bucket)->count, 3u);
  s.stop();
  EXPECT_EQ(raw->seen, std::vector<std::string>{bucket});
}

TEST_F(SchedulerTest, LostWorkerRetriesWithBackoffThenFails) {
  std::deque<JobOutcome> script;
  script.push_back({JobOutcome::Kind::worker_lost, std::nullopt, "worker hung"});
  script.push_back({JobOutcome::Kind::worker_lost, std::nullopt, "worker crashed"});
  Scheduler s(config, queue, metrics, one_runner(std::make_unique<ScriptedRunner>(std::move(script))), nullptr);
  queue.report_misses({{key(16), 1}}, [](const CommitResult&) {});
  s.start();
  ASSERT_TRUE(eventually([&] { return queue.find(key(16)) && queue.find(key(16))->state == JobState::failed; }));
  EXPECT_EQ(queue.find(key(16))->attempts, 2u);
  EXPECT_EQ(queue.find(key(16))->reason, "worker crashed");
  EXPECT_EQ(metrics.get(Counter::worker_restarts), 2u);
  EXPECT_EQ(metrics.get(Counter::jobs_failed), 1u);
}

TEST_F(SchedulerTest, StopReturnsTheRunningJobToTheQueue) {
  Scheduler s(config, queue, metrics, one_runner(std::make_unique<ScriptedRunner>(std::deque<JobOutcome>{})),
              nullptr);
  queue.report_misses({{key(16), 1}}, [](const CommitResult&) {});
  s.start();
  ASSERT_TRUE(eventually([&] { return s.running_keys().size() == 1; }));
  EXPECT_EQ(queue.find(key(16))->state, JobState::running);
  s.stop();
  EXPECT_EQ(queue.find(key(16))->state, JobState::queued);
  EXPECT_EQ(queue.find(key(16))->attempts, 0u);
}

TEST_F(SchedulerTest, CancelStopsTheRunAndKeepsItCancelled) {
  Scheduler s(config, queue, metrics, one_runner(std::make_unique<ScriptedRunner>(std::deque<JobOutcome>{})),
              nullptr);
  queue.report_misses({{key(16), 1}}, [](const CommitResult&) {});
  s.start();
  ASSERT_TRUE(eventually([&] { return s.running_keys().size() == 1; }));
  queue.cancel(key(16), [&](const CommitResult&, bool) { s.cancel_running(key(16)); });
  ASSERT_TRUE(eventually([&] { return s.running_keys().empty(); }));
  EXPECT_EQ(queue.find(key(16))->state, JobState::cancelled);
}

}  // namespace
}  // namespace kd::daemon
