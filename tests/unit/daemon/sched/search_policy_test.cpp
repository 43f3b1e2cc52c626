// The GPU policy of searches (issue 29 item 4): jobs know who queued them (a miss or a prewarm),
// the scheduler gives a miss-started search the share of the GPU `search_duty_cycle` allows and a
// prewarm `prewarm_duty_cycle`, the duty-cycle backend pauses between evaluations to stay under
// it and reports what it did, and status shows the policy at work.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "sched/duty_cycle.hpp"
#include "sched/scheduler.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

using namespace std::chrono_literals;
using test::eventually;

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};

std::string key(int n) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 "
         "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

void miss(JobQueue& q, const std::string& k) {
  std::promise<void> done;
  q.report_misses({{k, 1}}, [&](const CommitResult&) { done.set_value(); });
  done.get_future().wait();
}

void prewarm(JobQueue& q, const std::string& k) {
  std::promise<void> done;
  q.prewarm({{k, "", {}}}, [&](const CommitResult&, const std::vector<Refused>&) { done.set_value(); });
  done.get_future().wait();
}

TEST(JobOrigin, AMissQueuesAMissJobAndAPrewarmAPrewarmJob) {
  test::TempDir dir;
  {
    JobQueue q(dir.path());
    miss(q, key(1));
    prewarm(q, key(2));
    EXPECT_EQ(q.find(key(1))->origin, JobOrigin::miss);
    EXPECT_EQ(q.find(key(2))->origin, JobOrigin::prewarm);
    // A miss on a prewarmed key counts the call and leaves the job the prewarm's.
    miss(q, key(2));
    EXPECT_EQ(q.find(key(2))->origin, JobOrigin::prewarm);
    EXPECT_EQ(q.find(key(2))->count, 1u);
    // A prewarm of a key a miss queued claims it: the operator asked for it, at the prewarm's share.
    prewarm(q, key(1));
    EXPECT_EQ(q.find(key(1))->origin, JobOrigin::prewarm);
    EXPECT_EQ(q.find(key(1))->state, JobState::queued);
    EXPECT_EQ(q.find(key(1))->count, 1u);
  }
  JobQueue reopened(dir.path());
  EXPECT_EQ(reopened.find(key(1))->origin, JobOrigin::prewarm);
  EXPECT_EQ(reopened.find(key(2))->origin, JobOrigin::prewarm);
}

TEST(JobOrigin, APrewarmOfAMissJobBringsItsBudgetsAndReachesARunningSearch) {
  test::TempDir dir;
  JobQueue q(dir.path());
  miss(q, key(5));
  miss(q, key(6));
  q.update(key(6), [](Job& j) { j.state = JobState::running; });
  std::promise<void> done;
  q.prewarm({{key(5), "builtin", {2, 24, 8, 0}}, {key(6), "builtin", {2, 24, 8, 0}}},
            [&](const CommitResult&, const std::vector<Refused>&) { done.set_value(); });
  done.get_future().wait();
  const Job queued = *q.find(key(5));
  EXPECT_EQ(queued.origin, JobOrigin::prewarm);
  EXPECT_EQ(queued.budgets, (JobBudgets{2, 24, 8, 0})) << "the operator's budgets, not the defaults of a miss";
  EXPECT_EQ(queued.proposer, "builtin");
  const Job running = *q.find(key(6));
  EXPECT_EQ(running.state, JobState::running) << "a running search is not queued again";
  EXPECT_EQ(running.origin, JobOrigin::prewarm) << "its pauses read this (Progress::duty_cycle_now)";
}

TEST(JobOrigin, AFailedMissJobQueuedAgainByAPrewarmIsThePrewarms) {
  test::TempDir dir;
  JobQueue q(dir.path());
  miss(q, key(3));
  q.update(key(3), [](Job& j) { j.state = JobState::failed; });
  miss(q, key(3));  // a failed job stays failed on a miss
  EXPECT_EQ(q.find(key(3))->state, JobState::failed);
  EXPECT_EQ(q.find(key(3))->origin, JobOrigin::miss);
  prewarm(q, key(3));
  EXPECT_EQ(q.find(key(3))->state, JobState::queued);
  EXPECT_EQ(q.find(key(3))->origin, JobOrigin::prewarm);
}

TEST(JobOrigin, AJobStoredWithoutAnOriginIsAMissWhenItHasCalls) {
  const std::string with_calls =
      R"({"schema":1,"state":"queued","count":4,"est_call_us":1.0,"attempts":0,"created_unix_ms":1,"updated_unix_ms":1})";
  const std::string without_calls =
      R"({"schema":1,"state":"queued","count":0,"est_call_us":1.0,"attempts":0,"created_unix_ms":1,"updated_unix_ms":1})";
  EXPECT_EQ(parse_job(key(1), with_calls)->origin, JobOrigin::miss);
  EXPECT_EQ(parse_job(key(1), without_calls)->origin, JobOrigin::prewarm);
}

// Records each run's duty cycle; a run lasts until `release` (or stop).
class PolicyRunner final : public JobRunner {
public:
  DevicePart device() const override { return kH100; }
  JobOutcome run(const Job& job, const Budgets& budgets, Progress& progress, std::stop_token stop) override {
    {
      const std::lock_guard lock(mu_);
      duty_[job.key] = budgets.duty_cycle;
    }
    progress.gpu_time(1200ms, 10800ms);
    while (!stop.stop_requested() && !release.load()) std::this_thread::sleep_for(2ms);
    return {JobOutcome::Kind::no_improvement, std::nullopt, "test"};
  }
  std::optional<double> duty_of(const std::string& k) {
    const std::lock_guard lock(mu_);
    const auto it = duty_.find(k);
    return it == duty_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  std::atomic<bool> release{false};

private:
  std::mutex mu_;
  std::map<std::string, double> duty_;
};

TEST(SearchPolicy, AMissStartedSearchRunsAtTheSearchDutyCycleAndAPrewarmAtItsOwn) {
  test::TempDir dir;
  Config config;
  config.budgets = {8, 256, 600, 1000};
  config.search_policy = {0.1, 1.0};
  config.restart_backoff = 1ms;
  config.max_attempts = 3;
  JobQueue queue(dir.path());
  Metrics metrics;
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<PolicyRunner>());
  auto* runner = static_cast<PolicyRunner*>(runners.back().get());
  Scheduler s(config, queue, metrics, std::move(runners), nullptr);
  miss(queue, key(16));
  s.start();
  ASSERT_TRUE(eventually([&] { return runner->duty_of(key(16)).has_value(); }));
  EXPECT_DOUBLE_EQ(*runner->duty_of(key(16)), 0.1);
  ASSERT_TRUE(eventually([&] { return s.runners_status()[0].paused == 10800ms; }));
  RunnerStatus r = s.runners_status()[0];
  EXPECT_EQ(r.origin, "miss");
  EXPECT_DOUBLE_EQ(r.duty_cycle, 0.1);
  EXPECT_EQ(r.evaluating, 1200ms);
  const nlohmann::json j = to_json(r, 256);
  EXPECT_EQ(j["origin"], "miss");
  EXPECT_DOUBLE_EQ(j["duty_cycle"].get<double>(), 0.1);
  EXPECT_EQ(j["paused_ms"], 10800);
  EXPECT_NE(runners_prometheus_text(s.runners_status()).find("kdispatch_runner_paused_milliseconds_total{runner=\"0\""),
            std::string::npos);

  // A reload changes the next runs' shares; a prewarm runs at the prewarm's.
  config.search_policy = {0.1, 0.5};
  s.set_limits(config);
  prewarm(queue, key(32));
  runner->release = true;
  ASSERT_TRUE(eventually([&] { return runner->duty_of(key(32)).has_value(); }));
  EXPECT_DOUBLE_EQ(*runner->duty_of(key(32)), 0.5);
  s.stop();
  r = s.runners_status()[0];
  EXPECT_TRUE(r.origin.empty()) << "idle: no job, no share";
  EXPECT_EQ(r.paused, 21600ms) << "totals add up over runs";
}

TEST(DutyCycle, ThePauseKeepsTheBusyShareAtTheCap) {
  EXPECT_EQ(pause_after(0.25, 100ms, 0ms), 300ms);
  EXPECT_EQ(pause_after(0.25, 100ms, 120ms), 180ms) << "an idle gap before the evaluation counts";
  EXPECT_EQ(pause_after(0.25, 100ms, 500ms), 0ms);
  EXPECT_EQ(pause_after(0.1, 1000ms, 0ms), 9000ms);
  EXPECT_EQ(pause_after(1.0, 1000ms, 0ms), 0ms) << "full speed";
  EXPECT_EQ(pause_after(0.5, 0ms, 0ms), 0ms);
}

// An evaluation that keeps the "GPU" busy for `busy`.
class SlowBackend final : public search::EvalBackend {
public:
  explicit SlowBackend(std::chrono::milliseconds busy) : busy_(busy) {}
  eval::Verdict evaluate(const eval::EvalRequest&) override {
    std::this_thread::sleep_for(busy_);
    ++evaluations;
    eval::Verdict v;
    v.rule = eval::Rule::not_faster;
    return v;
  }
  double floor_us(const GemmKey&) override { return 7.0; }
  int evaluations = 0;

private:
  std::chrono::milliseconds busy_;
};

// Records what the backend reports.
class RecordingProgress final : public Progress {
public:
  void candidate_evaluated() override {}
  void candidate_rejected(std::string_view) override {}
  void worker_restarted() override {}
  void worker_lost(std::string_view) override {}
  void searching(std::string_view) override {}
  void gpu_time(std::chrono::milliseconds b, std::chrono::milliseconds p) override {
    busy.push_back(b);
    paused.push_back(p);
  }
  std::optional<double> duty_cycle_now() override { return duty_now; }
  std::vector<std::chrono::milliseconds> busy, paused;
  std::optional<double> duty_now;
};

TEST(DutyCycle, TheBackendTakesTheDutyCycleOfNowBeforeEachPause) {
  SlowBackend inner(20ms);
  RecordingProgress progress;
  std::vector<std::chrono::milliseconds> asked;
  DutyCycleBackend paced(inner, 0.1, progress, {},
                         [&](std::chrono::milliseconds p, std::stop_token) { asked.push_back(p); });
  const eval::EvalRequest request{};
  paced.evaluate(request);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], pause_after(0.1, progress.busy[0], 0ms));
  progress.duty_now = 1.0;  // a prewarm took the job over: full speed from the next evaluation on
  paced.evaluate(request);
  paced.evaluate(request);
  EXPECT_EQ(asked.size(), 1u) << "no pause at full speed";
}

TEST(DutyCycle, TheBackendPausesAfterEachEvaluationAndReportsIt) {
  SlowBackend inner(30ms);
  RecordingProgress progress;
  std::vector<std::chrono::milliseconds> asked;
  std::stop_source stop;
  DutyCycleBackend paced(inner, 0.25, progress, stop.get_token(),
                         [&](std::chrono::milliseconds p, std::stop_token) { asked.push_back(p); });
  const GemmKey k = std::get<GemmKey>(parse_key(key(16)));
  EXPECT_EQ(paced.floor_us(k), 7.0) << "everything but evaluate is the inner backend's";
  const eval::EvalRequest request{};
  EXPECT_EQ(paced.evaluate(request).rule, eval::Rule::not_faster);
  ASSERT_EQ(asked.size(), 1u);
  ASSERT_EQ(progress.busy.size(), 1u);
  EXPECT_GE(progress.busy[0], 30ms);
  EXPECT_EQ(asked[0], pause_after(0.25, progress.busy[0], 0ms)) << "three times the busy time at a quarter";

  std::this_thread::sleep_for(40ms);  // idle before the next evaluation: owed less
  paced.evaluate(request);
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_LE(asked[1], pause_after(0.25, progress.busy[1], 40ms));

  stop.request_stop();  // a stopped run does not pause
  paced.evaluate(request);
  EXPECT_EQ(asked.size(), 2u);
  EXPECT_EQ(inner.evaluations, 3);

  DutyCycleBackend full(inner, 1.0, progress, {}, [&](std::chrono::milliseconds p, std::stop_token) { asked.push_back(p); });
  full.evaluate(request);
  EXPECT_EQ(asked.size(), 2u) << "full speed never pauses";
  EXPECT_EQ(progress.busy.size(), 4u) << "but still reports the evaluation's time";
}

TEST(DutyCycle, AStopEndsAPauseAtOnce) {
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  pause_unless_stopped(std::chrono::minutes(10), stop.get_token());
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30)) << "the stop ended the pause";
}

}  // namespace
}  // namespace kd::daemon
