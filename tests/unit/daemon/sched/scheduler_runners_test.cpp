// Several search runners under one scheduler (issue 31 item 4, issue 32): jobs spread over them, a
// job keyed for one GPU model never runs on a runner of another, a runner whose worker is lost
// leaves the others searching, and each runner's state is reported (status, /metrics). The
// runners are test implementations of JobRunner over real LMDB queues.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "sched/scheduler.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

using namespace std::chrono_literals;
using test::eventually;

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};
const DevicePart kA100{"sm_80", "NVIDIA A100-SXM4-80GB", 108};

std::string shape(int n) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1";
}
std::string key_for(int n, const DevicePart& d) {
  return shape(n) + " arch=" + d.arch + " gpu=\"" + d.gpu + "\" sms=" + std::to_string(d.sms);
}

// Opens when `count` runs are inside at once (or when released), so a test can prove that jobs run
// side by side on different runners.
class Gate {
public:
  explicit Gate(std::size_t count) : count_(count) {}
  void enter(std::stop_token stop) {
    std::unique_lock lock(mu_);
    ++inside_;
    cv_.notify_all();
    cv_.wait(lock, stop, [&] { return open_ || inside_ >= count_; });
    open_ = true;
  }
  std::size_t most_inside() {
    const std::lock_guard lock(mu_);
    return inside_;
  }

private:
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::size_t count_;
  std::size_t inside_ = 0;
  bool open_ = false;
};

// A runner on `device` that records what it ran; each run waits at `gate` (when given), takes
// `run_time` and ends without a winner. Its first `lose_first` runs lose the worker instead.
class RecordingRunner final : public JobRunner {
public:
  RecordingRunner(DevicePart device, int ordinal, Gate* gate = nullptr, std::chrono::milliseconds run_time = 5ms,
                  int lose_first = 0)
      : device_(std::move(device)), ordinal_(ordinal), gate_(gate), run_time_(run_time), lose_first_(lose_first) {}
  DevicePart device() const override { return device_; }
  int device_ordinal() const override { return ordinal_; }
  int worker_pid() const override { return 1000 + ordinal_; }
  JobOutcome run(const Job& job, const Budgets&, Progress& progress, std::stop_token stop) override {
    {
      const std::lock_guard lock(mu_);
      seen_.push_back(job.key);
    }
    if (lose_first_ > 0) {
      --lose_first_;
      return {JobOutcome::Kind::worker_lost, std::nullopt, "worker did not start: test"};
    }
    progress.searching("round 1 of 1");
    if (gate_ != nullptr) gate_->enter(stop);
    std::this_thread::sleep_for(run_time_);
    progress.candidate_evaluated();
    return {JobOutcome::Kind::no_improvement, std::nullopt, "test: nothing beat the baseline"};
  }
  std::vector<std::string> seen() const {
    const std::lock_guard lock(mu_);
    return seen_;
  }

private:
  DevicePart device_;
  int ordinal_;
  Gate* gate_;
  std::chrono::milliseconds run_time_;
  int lose_first_;
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
};

Config test_config(std::chrono::milliseconds backoff = 1ms) {
  Config c;
  c.budgets = {8, 256, 600, 1000};
  c.restart_backoff = backoff;
  c.max_attempts = 3;
  return c;
}

void miss(JobQueue& queue, const std::vector<std::string>& keys) {
  std::vector<MissReport> reports;
  for (const auto& k : keys) reports.push_back({k, 1});
  std::promise<void> done;
  queue.report_misses(std::move(reports), [&](const CommitResult&) { done.set_value(); });
  done.get_future().wait();
}

bool all_done(JobQueue& queue, const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    const auto job = queue.find(k);
    if (!job || job->state != JobState::done) return false;
  }
  return true;
}

TEST(SchedulerRunners, JobsRunSideBySideOnEveryRunner) {
  test::TempDir dir;
  const Config config = test_config();
  JobQueue queue(dir.path());
  Metrics metrics;
  Gate gate(3);
  std::vector<RecordingRunner*> raw;
  std::vector<std::unique_ptr<JobRunner>> runners;
  for (int i = 0; i < 3; ++i) {
    runners.push_back(std::make_unique<RecordingRunner>(kH100, i, &gate));
    raw.push_back(static_cast<RecordingRunner*>(runners.back().get()));
  }
  Scheduler s(config, queue, metrics, std::move(runners), nullptr);
  std::vector<std::string> keys;
  for (int n = 1; n <= 9; ++n) keys.push_back(key_for(n, kH100));
  miss(queue, keys);
  s.start();
  ASSERT_TRUE(eventually([&] { return all_done(queue, keys); }));
  s.stop();
  // The gate opened only with three runs inside at once: three jobs ran side by side.
  EXPECT_GE(gate.most_inside(), 3u);
  std::uint64_t finished = 0;
  for (const RunnerStatus& r : s.runners_status()) {
    EXPECT_GE(r.jobs_finished, 1u) << "runner " << r.index;
    EXPECT_EQ(r.state, RunnerState::idle);
    finished += r.jobs_finished;
  }
  EXPECT_EQ(finished, keys.size());
  std::size_t runs = 0;
  for (const auto* r : raw) runs += r->seen().size();
  EXPECT_EQ(runs, keys.size()) << "every job ran exactly once";
}

TEST(SchedulerRunners, AJobKeyedForOneModelRunsOnlyOnARunnerOfThatModel) {
  test::TempDir dir;
  const Config config = test_config();
  JobQueue queue(dir.path());
  Metrics metrics;
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<RecordingRunner>(kH100, 0));
  runners.push_back(std::make_unique<RecordingRunner>(kA100, 1));
  runners.push_back(std::make_unique<RecordingRunner>(kH100, 2));
  std::vector<RecordingRunner*> raw;
  for (auto& r : runners) raw.push_back(static_cast<RecordingRunner*>(r.get()));
  Scheduler s(config, queue, metrics, std::move(runners), nullptr);
  std::vector<std::string> keys;
  for (int n = 1; n <= 6; ++n) keys.push_back(key_for(n, kH100));
  for (int n = 1; n <= 6; ++n) keys.push_back(key_for(n, kA100));
  // A GPU no runner has: never claimed.
  const DevicePart kL4{"sm_89", "NVIDIA L4", 58};
  const std::string foreign = key_for(7, kL4);
  miss(queue, keys);
  miss(queue, {foreign});
  s.start();
  ASSERT_TRUE(eventually([&] { return all_done(queue, keys); }));
  s.stop();
  for (const auto* r : raw)
    for (const auto& k : r->seen()) {
      const auto parsed = parse_key(k);
      ASSERT_TRUE(std::holds_alternative<GemmKey>(parsed));
      EXPECT_EQ(*std::get<GemmKey>(parsed).device, r->device()) << k << " ran on " << r->device().gpu;
    }
  EXPECT_EQ(raw[1]->seen().size(), 6u) << "the A100 runner ran every A100 job";
  EXPECT_EQ(raw[0]->seen().size() + raw[2]->seen().size(), 6u);
  EXPECT_EQ(queue.find(foreign)->state, JobState::queued);
}

TEST(SchedulerRunners, ALostWorkerLeavesTheOtherRunnersSearchingAndTheJobRunsAgain) {
  test::TempDir dir;
  const Config config = test_config(1000ms);
  JobQueue queue(dir.path());
  Metrics metrics;
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<RecordingRunner>(kH100, 0, nullptr, 5ms, /*lose_first=*/1));
  runners.push_back(std::make_unique<RecordingRunner>(kH100, 1, nullptr, 20ms));
  auto* losing = static_cast<RecordingRunner*>(runners[0].get());
  Scheduler s(config, queue, metrics, std::move(runners), nullptr);
  std::vector<std::string> keys;
  for (int n = 1; n <= 8; ++n) keys.push_back(key_for(n, kH100));
  miss(queue, keys);
  s.start();
  // Runner 0 loses its worker on its first job and rests for a second; runner 1 goes on meanwhile.
  ASSERT_TRUE(eventually([&] { return s.runners_status()[0].state == RunnerState::restarting; }, 5s));
  const RunnerStatus resting = s.runners_status()[0];
  EXPECT_NE(resting.progress.find("worker lost (worker did not start: test)"), std::string::npos) << resting.progress;
  EXPECT_EQ(resting.workers_lost, 1u);
  EXPECT_TRUE(eventually([&] {
    const auto now = s.runners_status();
    return now[0].state == RunnerState::restarting && now[1].jobs_finished >= 3;
  }, 5s)) << "runner 1 finished jobs while runner 0 rested";
  ASSERT_TRUE(eventually([&] { return all_done(queue, keys); }));
  s.stop();
  const std::string lost_key = losing->seen().at(0);
  EXPECT_EQ(queue.find(lost_key)->attempts, 2u) << "the lost job ran again";
  const auto status = s.runners_status();
  EXPECT_EQ(status[0].workers_lost, 1u);
  EXPECT_EQ(status[1].workers_lost, 0u);
  EXPECT_EQ(status[0].jobs_finished + status[1].jobs_finished, keys.size());
  EXPECT_EQ(metrics.get(Counter::worker_restarts), 1u);
}

// A runner that reports from inside its run and waits to be stopped.
class ReportingRunner final : public JobRunner {
public:
  DevicePart device() const override { return kH100; }
  int device_ordinal() const override { return 3; }
  int worker_pid() const override { return 4242; }
  JobOutcome run(const Job&, const Budgets&, Progress& progress, std::stop_token stop) override {
    progress.searching("round 2 of 8: 14 candidates so far");
    while (!stop.stop_requested() && !lose.load()) std::this_thread::sleep_for(2ms);
    progress.candidate_rejected("crashed");
    progress.worker_lost("crashed");
    while (!stop.stop_requested() && !recover.load()) std::this_thread::sleep_for(2ms);
    progress.candidate_evaluated();  // the next candidate ran on a fresh worker
    while (!stop.stop_requested()) std::this_thread::sleep_for(2ms);
    return {JobOutcome::Kind::stopped, std::nullopt, "stopped"};
  }
  std::atomic<bool> lose{false};
  std::atomic<bool> recover{false};
};

TEST(SchedulerRunners, StatusShowsEachRunnersGpuStateKeyAndProgress) {
  test::TempDir dir;
  const Config config = test_config();
  JobQueue queue(dir.path());
  Metrics metrics;
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<ReportingRunner>());
  auto* raw = static_cast<ReportingRunner*>(runners.back().get());
  Scheduler s(config, queue, metrics, std::move(runners), nullptr);
  const RunnerStatus before = s.runners_status().at(0);
  EXPECT_EQ(before.state, RunnerState::idle);
  EXPECT_EQ(before.ordinal, 3);
  EXPECT_EQ(before.device, kH100);
  miss(queue, {key_for(16, kH100)});
  s.start();
  ASSERT_TRUE(eventually([&] { return s.runners_status()[0].progress == "round 2 of 8: 14 candidates so far"; }));
  RunnerStatus r = s.runners_status()[0];
  EXPECT_EQ(r.state, RunnerState::searching);
  EXPECT_EQ(r.key, key_for(16, kH100));
  EXPECT_EQ(r.worker_pid, 4242);
  const nlohmann::json j = to_json(r, 256);
  EXPECT_EQ(j["state"], "searching");
  EXPECT_EQ(j["ordinal"], 3);
  EXPECT_EQ(j["gpu"], kH100.gpu);
  EXPECT_EQ(j["key"], key_for(16, kH100));
  EXPECT_EQ(j["worker_pid"], 4242);
  const std::string metrics_text = runners_prometheus_text(s.runners_status());
  EXPECT_NE(metrics_text.find("kdispatch_runner_searching{runner=\"0\",device=\"3\",gpu=\"NVIDIA H100 80GB HBM3\"} 1"),
            std::string::npos)
      << metrics_text;
  EXPECT_EQ(metrics_text.find("gemm"), std::string::npos) << "no keys in /metrics";

  raw->lose = true;
  ASSERT_TRUE(eventually([&] { return s.runners_status()[0].state == RunnerState::restarting; }));
  r = s.runners_status()[0];
  EXPECT_EQ(r.key, key_for(16, kH100)) << "still the same job";
  EXPECT_NE(r.progress.find("worker lost (crashed)"), std::string::npos) << r.progress;
  raw->recover = true;
  ASSERT_TRUE(eventually([&] { return s.runners_status()[0].state == RunnerState::searching; }));
  EXPECT_EQ(s.runners_status()[0].progress, "round 2 of 8: 14 candidates so far") << "the round's line is back";
  s.stop();
  EXPECT_EQ(s.runners_status()[0].state, RunnerState::idle);
  EXPECT_TRUE(s.runners_status()[0].key.empty());
}

}  // namespace
}  // namespace kd::daemon
