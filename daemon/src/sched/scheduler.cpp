#include "sched/scheduler.hpp"

#include <functional>

#include <algorithm>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/winner_record.hpp"

namespace kd::daemon {
namespace {

constexpr std::chrono::milliseconds kIdlePoll{500};

// The job's key was parsed once, when it was queued (Job::parsed): a claim parses nothing.
bool device_allows(const Job& job, const DevicePart& device) {
  const std::optional<DevicePart>* keyed = job.parsed.device();
  if (keyed == nullptr) return false;
  return !keyed->has_value() || **keyed == device;
}

double duty_cycle_of(const Job& job, const SearchPolicy& policy) {
  return job.origin == JobOrigin::miss ? policy.miss_duty_cycle : policy.prewarm_duty_cycle;
}

Budgets effective_budgets(const Job& job, const Budgets& defaults, const SearchPolicy& policy) {
  const auto pick = [](std::uint64_t own, std::uint64_t def) { return own != 0 ? own : def; };
  return Budgets{pick(job.budgets.rounds, defaults.rounds),
                 pick(job.budgets.candidates, defaults.candidates),
                 pick(job.budgets.wall_seconds, defaults.wall_seconds),
                 pick(job.budgets.llm_tokens, defaults.llm_tokens),
                 duty_cycle_of(job, policy)};
}

}  // namespace

// One runner's reports: counters into Metrics, its state and progress line into its slot.
class Scheduler::SlotProgress final : public Progress {
public:
  SlotProgress(Scheduler& s, std::size_t index) : s_(s), index_(index) {}
  // A new job: no round text yet.
  void reset() { round_text_.clear(); }
  void candidate_evaluated() override {
    s_.metrics_.add(Counter::candidates_evaluated);
    searching_again();
  }
  void candidate_rejected(std::string_view reason) override {
    s_.metrics_.add_rejected(reason);
    searching_again();
  }
  void worker_restarted() override {
    s_.metrics_.add(Counter::worker_restarts);
    edit([](RunnerStatus& r) { ++r.workers_lost; });
  }
  void worker_lost(std::string_view why) override {
    edit([&](RunnerStatus& r) {
      r.state = RunnerState::restarting;
      r.progress = fmt::format("worker lost ({}); a fresh one starts for the next candidate", why);
    });
  }
  void searching(std::string_view text) override {
    round_text_ = std::string(text);
    edit([&](RunnerStatus& r) {
      r.state = RunnerState::searching;
      r.progress = round_text_;
    });
  }
  void gpu_time(std::chrono::milliseconds busy, std::chrono::milliseconds paused) override {
    edit([&](RunnerStatus& r) {
      r.evaluating += busy;
      r.paused += paused;
    });
  }
  // The job as stored now (a prewarm may have taken over a miss's job) under the policy as loaded
  // now (SIGHUP): one LMDB read per evaluation, against evaluations of 0.1 s and more.
  std::optional<double> duty_cycle_now() override {
    std::string key;
    {
      const std::lock_guard lock(s_.mu_);
      key = s_.slots_[index_].status.key;
    }
    if (key.empty()) return std::nullopt;
    const auto job = s_.queue_.find(key);
    if (!job) return std::nullopt;
    const double duty = duty_cycle_of(*job, s_.limits().policy);
    edit([&](RunnerStatus& r) {
      r.duty_cycle = duty;
      r.origin = std::string(to_string(job->origin));
    });
    return duty;
  }

private:
  // A candidate finished: a restarted worker serves again, and the round's line comes back.
  void searching_again() {
    edit([&](RunnerStatus& r) {
      if (r.state == RunnerState::restarting) r.progress = round_text_;
      r.state = RunnerState::searching;
    });
  }
  template <class Change>
  void edit(Change&& change) {
    const std::lock_guard lock(s_.mu_);
    change(s_.slots_[index_].status);
  }
  Scheduler& s_;
  std::size_t index_;
  std::string round_text_;  // the last searching() line of the job (the runner's thread only)
};

Scheduler::Scheduler(const Config& config, JobQueue& queue, Metrics& metrics,
                     std::vector<std::unique_ptr<JobRunner>> runners, PublishedFn on_published)
    : config_(config), limits_{config.budgets, config.search_policy, config.max_attempts, config.restart_backoff},
      queue_(queue),
      metrics_(metrics), runners_(std::move(runners)), on_published_(std::move(on_published)) {
  slots_.resize(runners_.size());
  for (std::size_t i = 0; i < runners_.size(); ++i) {
    slots_[i].status.index = i;
    slots_[i].status.ordinal = runners_[i]->device_ordinal();
    slots_[i].status.device = runners_[i]->device();
  }
}

void Scheduler::set_limits(const Config& c) {
  const std::lock_guard lock(mu_);
  limits_ = Limits{c.budgets, c.search_policy, c.max_attempts, c.restart_backoff};
}

Scheduler::Limits Scheduler::limits() const {
  const std::lock_guard lock(mu_);
  return limits_;
}

Scheduler::~Scheduler() { stop(); }

std::chrono::milliseconds Scheduler::backoff(std::chrono::milliseconds base, std::uint32_t attempts) {
  const std::uint32_t doublings = std::min<std::uint32_t>(attempts == 0 ? 0 : attempts - 1, 6);
  return base * (std::int64_t{1} << doublings);
}

void Scheduler::start() {
  for (std::size_t i = 0; i < runners_.size(); ++i)
    threads_.emplace_back([this, i](std::stop_token stop) { loop(i, stop); });
}

void Scheduler::stop() {
  {
    const std::lock_guard lock(mu_);
    for (Slot& slot : slots_)
      if (slot.stop) slot.stop->request_stop();
  }
  for (auto& t : threads_) t.request_stop();
  work_cv_.notify_all();
  threads_.clear();  // jthread joins
}

void Scheduler::notify_work() {
  {
    const std::lock_guard lock(mu_);
    ++work_epoch_;
  }
  work_cv_.notify_all();
}

void Scheduler::cancel_running(const std::string& key) {
  const std::lock_guard lock(mu_);
  for (Slot& slot : slots_)
    if (slot.stop && slot.status.key == key) slot.stop->request_stop();
}

std::string Scheduler::progress_of(const std::string& key) const {
  const std::lock_guard lock(mu_);
  for (const Slot& slot : slots_)
    if (slot.stop && slot.status.key == key) return slot.status.progress;
  return {};
}

std::vector<std::string> Scheduler::running_keys() const {
  const std::lock_guard lock(mu_);
  std::vector<std::string> keys;
  for (const Slot& slot : slots_)
    if (slot.stop) keys.push_back(slot.status.key);
  return keys;
}

std::vector<RunnerStatus> Scheduler::runners_status() const {
  std::vector<RunnerStatus> out;
  {
    const std::lock_guard lock(mu_);
    for (const Slot& slot : slots_) out.push_back(slot.status);
  }
  for (RunnerStatus& r : out) r.worker_pid = runners_[r.index]->worker_pid();
  return out;
}

void Scheduler::loop(std::size_t index, std::stop_token stop) {
  JobRunner& runner = *runners_[index];
  const DevicePart device = runner.device();
  SlotProgress progress(*this, index);
  std::uint32_t lost_in_a_row = 0;  // runs in a row whose worker was lost (did not start)
  while (!stop.stop_requested()) {
    std::uint64_t epoch = 0;
    {
      const std::lock_guard lock(mu_);
      epoch = work_epoch_;
    }
    const auto job = queue_.claim_next([&](const Job& j) { return device_allows(j, device); });
    if (!job) {
      std::unique_lock lock(mu_);
      work_cv_.wait_for(lock, stop, kIdlePoll, [&] { return work_epoch_ != epoch; });
      continue;
    }
    const auto outcome = run_job(index, *job, device, progress, stop);
    if (!outcome || outcome->kind != JobOutcome::Kind::worker_lost) {
      if (outcome && outcome->kind != JobOutcome::Kind::stopped) lost_in_a_row = 0;
      continue;
    }
    // The job went back with its own backoff; this runner rests too, so that a GPU whose worker
    // cannot start does not claim (and spend an attempt of) every queued job in turn.
    const auto pause = backoff(limits().restart_backoff, ++lost_in_a_row);
    std::unique_lock lock(mu_);
    slots_[index].status.state = RunnerState::restarting;
    slots_[index].status.progress =
        fmt::format("worker lost ({}); claiming again in {} ms", outcome->reason, pause.count());
    work_cv_.wait_for(lock, stop, pause, [] { return false; });
    slots_[index].status.state = RunnerState::idle;
    slots_[index].status.progress.clear();
  }
}

std::optional<Scheduler::RunEnd> Scheduler::run_job(
    std::size_t index, const Job& job, const DevicePart& device, SlotProgress& progress, std::stop_token stop) {
  auto source = std::make_shared<std::stop_source>();
  progress.reset();
  const Limits now = limits();
  const Budgets budgets = effective_budgets(job, now.budgets, now.policy);
  {
    const std::lock_guard lock(mu_);
    Slot& slot = slots_[index];
    slot.stop = source;
    slot.status.state = RunnerState::searching;
    slot.status.key = job.key;
    slot.status.progress.clear();
    slot.status.origin = std::string(to_string(job.origin));
    slot.status.duty_cycle = budgets.duty_cycle;
  }
  const auto release = [&] {
    const std::lock_guard lock(mu_);
    Slot& slot = slots_[index];
    slot.stop.reset();
    slot.status.state = RunnerState::idle;
    slot.status.key.clear();
    slot.status.progress.clear();
    slot.status.origin.clear();
    slot.status.duty_cycle = 0;
  };
  // Issue 31: the full key the fleet's lease and the tier's records go by.
  // A stored key that no longer parses (a cache salvaged by hand) goes by its line as stored.
  std::string full_key = job.key;
  if (job.parsed.parsed()) full_key = job.parsed.full_line_on(device);
  if (!fleet_allows(job, full_key)) {
    release();
    return std::nullopt;
  }
  std::stop_callback forward(stop, [source] { source->request_stop(); });
  JobOutcome outcome;
  try {
    outcome = runners_[index]->run(job, budgets, progress, source->get_token());
  } catch (const std::exception& e) {
    outcome = JobOutcome{JobOutcome::Kind::worker_lost, std::nullopt, e.what()};
  }
  release();
  const auto kind = outcome.kind;
  std::string reason = outcome.reason;
  // Issue 31: what the fleet learns of this search (copied before record_outcome consumes it).
  std::optional<Record> fleet_winner;
  std::string fleet_reason;
  if (fleet_.after_search) {
    if (outcome.kind == JobOutcome::Kind::winner && outcome.winner) {
      fleet_winner = *outcome.winner;
      if (fleet_winner->key_line.empty()) fleet_winner->key_line = full_key;
    } else if (outcome.kind == JobOutcome::Kind::no_improvement) {
      fleet_reason = outcome.reason.empty() ? "no candidate beat the baseline" : outcome.reason;
    } else if (outcome.kind == JobOutcome::Kind::failed) {
      fleet_reason = outcome.reason;
    }
  }
  try {
    record_outcome(job, device, std::move(outcome));
  } catch (const std::exception& e) {
    spdlog::error("scheduler: recording the outcome of '{}' failed: {}", job.key, e.what());
  }
  {
    const std::lock_guard lock(mu_);
    RunnerStatus& r = slots_[index].status;
    switch (kind) {
      case JobOutcome::Kind::winner: ++r.published; [[fallthrough]];
      case JobOutcome::Kind::no_improvement:
      case JobOutcome::Kind::failed: ++r.jobs_finished; break;
      case JobOutcome::Kind::worker_lost: ++r.workers_lost; break;
      case JobOutcome::Kind::stopped: break;
    }
  }
  if (fleet_.after_search) fleet_.after_search(full_key, fleet_winner ? &*fleet_winner : nullptr, fleet_reason);
  return RunEnd{kind, std::move(reason)};
}

bool Scheduler::fleet_allows(const Job& job, const std::string& full_key) {
  if (!fleet_.before_search) return true;
  const FleetDecision d = fleet_.before_search(full_key);
  if (d.kind == FleetDecision::Kind::search) return true;
  const bool finished = d.kind == FleetDecision::Kind::finished;
  if (finished && job.parsed.parsed()) {
    // Another daemon searched it without a winner (a winner would be in the tier, to import):
    // this cache gets the vendor verdict that daemon's got, so this daemon's clients stop
    // reporting the key, and a bucket's n are not searched one at a time here.
    commit_verdict(job, full_key, "searched by another daemon of the fleet: " + d.why, 0, 0, {});
    return false;
  }
  queue_.update(job.key, [&](Job& j) {
    if (j.state != JobState::running) return;  // cancelled meanwhile
    if (j.attempts > 0) --j.attempts;          // not searched: no attempt spent
    if (finished) {
      j.state = JobState::done;
      j.reason = "searched by another daemon of the fleet: " + d.why;
    } else {
      j.state = JobState::queued;
      j.reason = "waiting for the fleet: " + d.why;
      j.not_before_unix_ms = unix_ms_now() + fleet_.wait.count();
    }
  });
  return false;
}

void Scheduler::commit_verdict(const Job& job, const std::string& full_key, std::string reason, double best_us,
                               double baseline_us, const std::string& search_id) {
  const Record verdict = search::make_vendor_record(full_key, reason, best_us, baseline_us, search_id);
  const auto generation = queue_.commit_winner(job.key, verdict, std::move(reason));
  metrics_.add(Counter::vendor_verdicts);
  spdlog::info("vendor verdict for {} (generation {}): {}", verdict.key_line, generation, verdict.idea);
  if (on_published_) on_published_(verdict.key_line, generation);
}

void Scheduler::record_outcome(const Job& job, const DevicePart& device, JobOutcome outcome) {
  if (!outcome.tree_json.empty()) {
    try {
      queue_.store_tree(outcome.search_id, std::move(outcome.tree_json));
      // The job names its tree, so purging the job removes a tree no record cites.
      queue_.update(job.key, [&](Job& j) { j.search_id = outcome.search_id; });
    } catch (const std::exception& e) {
      spdlog::warn("search tree {} not stored: {}", outcome.search_id, e.what());
    }
  }
  using Kind = JobOutcome::Kind;
  switch (outcome.kind) {
    case Kind::winner: {
      if (!outcome.winner) throw std::logic_error("runner returned a winner without a record");
      Record& r = *outcome.winner;
      if (r.key_line.empty()) r.key_line = job.parsed.full_line_on(device);
      const auto generation = queue_.commit_winner(job.key, r);
      metrics_.add(Counter::winners_published);
      spdlog::info("published {} (generation {})", r.key_line, generation);
      if (on_published_) on_published_(r.key_line, generation);
      return;
    }
    case Kind::no_improvement: {
      std::string reason = outcome.reason.empty() ? "no candidate beat the baseline" : outcome.reason;
      // The vendor verdict: applications stop reporting the key (or every n of its bucket) as a
      // miss, so nothing searches it again. A job whose line does not parse has no full key.
      if (job.parsed.parsed()) {
        commit_verdict(job, job.parsed.full_line_on(device), std::move(reason), outcome.best_us,
                       outcome.baseline_us, outcome.search_id);
        return;
      }
      queue_.update(job.key, [&](Job& j) {
        j.state = JobState::done;
        j.reason = std::move(reason);
      });
      return;
    }
    case Kind::failed:
      metrics_.add(Counter::jobs_failed);
      queue_.update(job.key, [&](Job& j) {
        j.state = JobState::failed;
        j.reason = outcome.reason;
      });
      return;
    case Kind::worker_lost: {
      metrics_.add(Counter::worker_restarts);
      const Limits now = limits();
      const bool exhausted = job.attempts >= now.max_attempts;
      if (exhausted) metrics_.add(Counter::jobs_failed);
      const auto delay = backoff(now.restart_backoff, job.attempts);
      spdlog::warn("job '{}': worker lost ({}); {}", job.key, outcome.reason,
                   exhausted ? "failed after max attempts"
                             : fmt::format("retry in {} ms", delay.count()));
      queue_.update(job.key, [&](Job& j) {
        if (j.state != JobState::running) return;  // cancelled meanwhile
        j.state = exhausted ? JobState::failed : JobState::queued;
        j.reason = outcome.reason;
        j.not_before_unix_ms = unix_ms_now() + delay.count();
      });
      return;
    }
    case Kind::stopped:
      queue_.update(job.key, [&](Job& j) {
        if (j.state != JobState::running) return;  // cancelled: stays cancelled
        j.state = JobState::queued;
        if (j.attempts > 0) --j.attempts;  // a shutdown is not the job's fault
        j.reason = "stopped by shutdown; resumes";
      });
      return;
  }
}

}  // namespace kd::daemon
