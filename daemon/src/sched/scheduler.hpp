// The scheduler: one thread per JobRunner (one per GPU worker). Each thread claims the
// highest-priority queued job its GPU may run, runs it, and records the outcome: publish a winner
// (commit, generation bump, `on_published`), mark done/failed, or re-queue with exponential
// backoff after a lost worker (failed after max_attempts runs). So jobs spread over the runners as
// they free up, a job keyed for one GPU model runs only on a runner of that model, and a runner
// whose worker is lost leaves the others searching. A runner whose worker did not start waits
// (the same backoff, by its consecutive losses) before it claims again, so that a broken GPU does
// not take every queued job's attempts.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "http/metrics.hpp"
#include "queue/job_queue.hpp"
#include "sched/job_runner.hpp"
#include "sched/runner_status.hpp"

namespace kd::daemon {

// Fleet hooks (issue 31; remote/remote_tier.hpp supplies them): one search per key across the
// daemons sharing a remote tier. Unset without a remote tier.
struct FleetDecision {
  enum class Kind : std::uint8_t {
    search,    // this daemon holds the key's lease (or the tier is unreachable): search it
    wait,      // another daemon searches it, or its record is being imported: put the job back
    finished,  // another daemon searched it and found nothing faster: the job is done
  };
  Kind kind = Kind::search;
  std::string why;  // wait: who searches it; finished: that search's reason
};
struct FleetHooks {
  std::function<FleetDecision(const std::string& full_key)> before_search;
  // After a search: its winner, else the reason of a done or failed job (both empty: the run was
  // stopped or its worker lost, and the lease is released without a result).
  std::function<void(const std::string& full_key, const Record* winner, const std::string& done_reason)>
      after_search;
  std::chrono::milliseconds wait{1000};  // how long a waiting job stays back before it is claimed again
};

class Scheduler {
public:
  using PublishedFn = std::function<void(const std::string& key, std::uint64_t generation)>;

  Scheduler(const Config& config, JobQueue& queue, Metrics& metrics,
            std::vector<std::unique_ptr<JobRunner>> runners, PublishedFn on_published);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void start();
  // Stops every runner (their jobs go back to queued) and joins the threads.
  void stop();
  // New work may be there (misses, prewarm): wake idle threads now instead of at the next poll.
  void notify_work();
  // Stops the run of `key` if one is running (after the queue marked it cancelled).
  void cancel_running(const std::string& key);
  // Takes the reloadable settings it reads (budgets, search policy, max_attempts, restart_backoff) from `c`, for
  // the jobs and retries that start from now on (SIGHUP; config_reload.hpp). Thread-safe.
  void set_limits(const Config& c);
  // Installs the fleet's hooks (issue 31). Before start().
  void set_fleet_hooks(FleetHooks hooks) { fleet_ = std::move(hooks); }

  std::size_t runner_count() const noexcept { return runners_.size(); }
  // Keys being searched now, one per busy runner.
  std::vector<std::string> running_keys() const;
  // Every runner, in order: its GPU, what it does now and what it did (status, /metrics).
  std::vector<RunnerStatus> runners_status() const;
  // The running search's progress line for `key`, empty when it is not running.
  std::string progress_of(const std::string& key) const;

  // Backoff before attempt `attempts + 1` after `attempts` lost workers: base * 2^(attempts-1),
  // capped at 64 x base.
  static std::chrono::milliseconds backoff(std::chrono::milliseconds base, std::uint32_t attempts);

private:
  class SlotProgress;
  void loop(std::size_t index, std::stop_token stop);
  // How a claimed job's run ended; nullopt from run_job when the fleet kept it from running here.
  struct RunEnd {
    JobOutcome::Kind kind;
    std::string reason;
  };
  // Runs the claimed `job` on runner `index` and records its outcome.
  std::optional<RunEnd> run_job(std::size_t index, const Job& job, const DevicePart& device,
                                SlotProgress& progress, std::stop_token stop);
  void record_outcome(const Job& job, const DevicePart& device, JobOutcome outcome);
  // Commits the vendor verdict (store/record.hpp) for `job` under `full_key`, marks it done with
  // `reason` and sends the `published` notice.
  void commit_verdict(const Job& job, const std::string& full_key, std::string reason, double best_us,
                      double baseline_us, const std::string& search_id);
  // The fleet's answer for a claimed job; true when this runner searches it now (issue 31).
  bool fleet_allows(const Job& job, const std::string& full_key);

  struct Limits {
    Budgets budgets;
    SearchPolicy policy;
    std::uint32_t max_attempts = 0;
    std::chrono::milliseconds restart_backoff{0};
  };
  Limits limits() const;

  const Config& config_;
  Limits limits_;  // (mu_): the reloadable settings, copied from config_ and set_limits
  JobQueue& queue_;
  Metrics& metrics_;
  std::vector<std::unique_ptr<JobRunner>> runners_;
  PublishedFn on_published_;
  FleetHooks fleet_;

  // What each runner does now (mu_): its job's key and stop source while it holds one.
  struct Slot {
    RunnerStatus status;
    std::shared_ptr<std::stop_source> stop;  // set while status.key names a claimed job
  };

  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // one per runner (mu_)
  std::condition_variable_any work_cv_;
  std::uint64_t work_epoch_ = 0;
  std::vector<std::jthread> threads_;
};

}  // namespace kd::daemon
