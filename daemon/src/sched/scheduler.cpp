#include "sched/scheduler.hpp"

#include <functional>

#include <algorithm>
#include <variant>

#include <spdlog/spdlog.h>

namespace kd::daemon {
namespace {

constexpr std::chrono::milliseconds kIdlePoll{500};

class MetricsProgress final : public Progress {
public:
  using Note = std::function<void(std::string_view)>;
  MetricsProgress(Metrics& m, Note note) : m_(m), note_(std::move(note)) {}
  void candidate_evaluated() override { m_.add(Counter::candidates_evaluated); }
  void candidate_rejected(std::string_view reason) override { m_.add_rejected(reason); }
  void worker_restarted() override { m_.add(Counter::worker_restarts); }
  void searching(std::string_view text) override { note_(text); }

private:
  Metrics& m_;
  Note note_;
};

bool device_allows(const Job& job, const DevicePart& device) {
  const auto parsed = parse_key(job.key);
  const auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr) return false;
  return !key->device || *key->device == device;
}

Budgets effective_budgets(const Job& job, const Budgets& defaults) {
  const auto pick = [](std::uint64_t own, std::uint64_t def) { return own != 0 ? own : def; };
  return Budgets{pick(job.budgets.rounds, defaults.rounds),
                 pick(job.budgets.candidates, defaults.candidates),
                 pick(job.budgets.wall_seconds, defaults.wall_seconds),
                 pick(job.budgets.llm_tokens, defaults.llm_tokens)};
}

}  // namespace

Scheduler::Scheduler(const Config& config, JobQueue& queue, Metrics& metrics,
                     std::vector<std::unique_ptr<JobRunner>> runners, PublishedFn on_published)
    : config_(config), limits_{config.budgets, config.max_attempts, config.restart_backoff}, queue_(queue),
      metrics_(metrics), runners_(std::move(runners)), on_published_(std::move(on_published)) {}

void Scheduler::set_limits(const Config& c) {
  const std::lock_guard lock(mu_);
  limits_ = Limits{c.budgets, c.max_attempts, c.restart_backoff};
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
    for (auto& [index, run] : running_) run.second->request_stop();
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
  for (auto& [index, run] : running_)
    if (run.first == key) run.second->request_stop();
}

std::string Scheduler::progress_of(const std::string& key) const {
  const std::lock_guard lock(mu_);
  const auto it = progress_.find(key);
  return it == progress_.end() ? std::string() : it->second;
}

std::vector<std::string> Scheduler::running_keys() const {
  const std::lock_guard lock(mu_);
  std::vector<std::string> keys;
  for (const auto& [index, run] : running_) keys.push_back(run.first);
  return keys;
}

void Scheduler::loop(std::size_t index, std::stop_token stop) {
  JobRunner& runner = *runners_[index];
  const DevicePart device = runner.device();
  std::string current_key;  // the job this runner's thread is searching (its own thread only)
  MetricsProgress progress(metrics_, [this, &current_key](std::string_view text) {
    const std::lock_guard lock(mu_);
    progress_[current_key] = std::string(text);
  });
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
    auto source = std::make_shared<std::stop_source>();
    {
      const std::lock_guard lock(mu_);
      running_[index] = {job->key, source};
    }
    current_key = job->key;
    // Issue 31: the full key the fleet's lease and the tier's records go by.
    // A stored key that no longer parses (a cache salvaged by hand) goes by its line as stored.
    std::string full_key = job->key;
    if (const auto parsed = parse_key(job->key); const auto* key = std::get_if<GemmKey>(&parsed))
      full_key = key->with_device(device).full_line();
    if (!fleet_allows(*job, full_key)) {
      const std::lock_guard lock(mu_);
      running_.erase(index);
      continue;
    }
    std::stop_callback forward(stop, [source] { source->request_stop(); });
    JobOutcome outcome;
    try {
      outcome = runner.run(*job, effective_budgets(*job, limits().budgets), progress,
                           source->get_token());
    } catch (const std::exception& e) {
      outcome = JobOutcome{JobOutcome::Kind::worker_lost, std::nullopt, e.what()};
    }
    {
      const std::lock_guard lock(mu_);
      running_.erase(index);
      progress_.erase(job->key);
    }
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
      record_outcome(*job, device, std::move(outcome));
    } catch (const std::exception& e) {
      spdlog::error("scheduler: recording the outcome of '{}' failed: {}", job->key, e.what());
    }
    if (fleet_.after_search) fleet_.after_search(full_key, fleet_winner ? &*fleet_winner : nullptr, fleet_reason);
  }
}

bool Scheduler::fleet_allows(const Job& job, const std::string& full_key) {
  if (!fleet_.before_search) return true;
  const FleetDecision d = fleet_.before_search(full_key);
  if (d.kind == FleetDecision::Kind::search) return true;
  const bool finished = d.kind == FleetDecision::Kind::finished;
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
      if (r.key_line.empty()) {
        const auto parsed = parse_key(job.key);
        r.key_line = std::get<GemmKey>(parsed).with_device(device).full_line();
      }
      const auto generation = queue_.commit_winner(job.key, r);
      metrics_.add(Counter::winners_published);
      spdlog::info("published {} (generation {})", r.key_line, generation);
      if (on_published_) on_published_(r.key_line, generation);
      return;
    }
    case Kind::no_improvement:
      queue_.update(job.key, [&](Job& j) {
        j.state = JobState::done;
        j.reason = outcome.reason.empty() ? "no candidate beat the baseline" : outcome.reason;
      });
      return;
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
