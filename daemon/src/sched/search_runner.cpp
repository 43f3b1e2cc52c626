#include "sched/search_runner.hpp"

#include <map>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/driver.hpp"
#include "driver/gpu_target.hpp"
#include "driver/search_driver.hpp"
#include "eval/verdict.hpp"
#include "range/range_search.hpp"
#include "sched/duty_cycle.hpp"
#include "driver/winner_record.hpp"
#include "worker/worker_parent.hpp"

namespace kd::daemon {
namespace {

constexpr std::chrono::seconds kWatchdog{60};

search::CompileServiceOptions compile_options(const Config& config) {
  search::CompileServiceOptions o;
  o.threads = config.compile_threads;
  o.cache_dir = config.cache_dir / "compile-cache";
  return o;
}

// One mutex per device ordinal, for start_worker.
std::mutex& start_mutex(int ordinal) {
  static std::mutex guard;
  static std::map<int, std::mutex> by_ordinal;
  const std::lock_guard lock(guard);
  return by_ordinal[ordinal];
}

bool worker_was_lost(const std::string& verdict) {
  return verdict == eval::to_string(eval::Rule::crashed) || verdict == eval::to_string(eval::Rule::hang_timeout);
}

}  // namespace

SearchJobRunner::SearchJobRunner(const DeviceInfo& device, const Config& config)
    : device_(device), cache_dir_(config.cache_dir), default_proposer_(config.proposer),
      proposer_settings_(proposer_settings(config)),
      compiler_(compile_options(config)),
      backend_(std::make_unique<search::WorkerBackend>(
          worker::default_worker_spawn(device.ordinal, config.cache_dir), kWatchdog)) {}

DevicePart SearchJobRunner::device() const { return {device_.arch, device_.name, device_.sms}; }

void SearchJobRunner::start_worker() {
  const std::lock_guard lock(start_mutex(device_.ordinal));
  backend_->start();
  worker_pid_.store(backend_->worker_pid(), std::memory_order_relaxed);
}

JobOutcome SearchJobRunner::run(const Job& job, const Budgets& budgets, Progress& progress,
                                std::stop_token stop) {
  // Parsed when the job was queued (Job::parsed); the scheduler claims only jobs whose key parsed.
  if (!job.parsed.parsed()) return {JobOutcome::Kind::failed, std::nullopt, "the job's key line does not parse"};
  // Issue 33: a row operator's job searches with the proposers that serve row operators (builtin's
  // row_reduce and llm's row prompts; the driver leaves out cuBLASLt), exact only, against the gate's
  // row baseline.
  const OpKey queued = job.parsed.row ? OpKey(*job.parsed.row) : OpKey(*job.parsed.key);
  const OpKey op = std::visit([&](const auto& k) { return OpKey(k.device ? k : k.with_device(device())); }, queued);
  const GemmKey* gemm = std::get_if<GemmKey>(&op);
  const std::string_view baseline_name = gemm ? "cuBLAS" : "the baseline";
  const std::string selection = job.proposer.empty() ? default_proposer_ : job.proposer;
  auto names = search::parse_proposer_list(selection.empty() ? "builtin" : selection);
  if (auto* err = std::get_if<std::string>(&names))
    return {JobOutcome::Kind::failed, std::nullopt, "proposer: " + *err};
  // builtin always runs, first: the offline default, and the seeds llm improves.
  std::vector<search::ProposerName> selected = std::get<std::vector<search::ProposerName>>(names);
  std::erase(selected, search::ProposerName::builtin);
  selected.insert(selected.begin(), search::ProposerName::builtin);
  search::ProposerSettings settings = proposer_settings_;
  settings.llm_tokens = budgets.llm_tokens;
  auto made = search::make_proposers(selected, settings);
  if (auto* err = std::get_if<std::string>(&made)) return {JobOutcome::Kind::failed, std::nullopt, *err};
  const auto owned = std::move(std::get<0>(made));
  std::vector<search::Proposer*> proposers;
  for (const auto& p : owned) proposers.push_back(p.get());

  search::SearchOptions opts;
  if (budgets.rounds) opts.budget.rounds = static_cast<int>(budgets.rounds);
  if (budgets.candidates) opts.budget.max_candidates = static_cast<int>(budgets.candidates);
  if (budgets.wall_seconds) opts.budget.wall = std::chrono::seconds(budgets.wall_seconds);
  opts.cancelled = [&stop] { return stop.stop_requested(); };

  int restarts_seen = backend_->restarts();
  try {
    start_worker();
  } catch (const std::exception& e) {
    return {JobOutcome::Kind::worker_lost, std::nullopt, std::string("worker did not start: ") + e.what()};
  }
  const search::GpuTarget target = search::GpuTarget::from(device_);
  int candidates = 0;
  double best_us = 0, baseline_us = 0;
  const search::SearchObserver observer = [&](const search::SearchEvent& e) {
    if (e.kind == search::SearchEvent::Kind::round_started) {
      progress.searching(fmt::format("round {} of {}: {} candidates so far, best {}", e.round,
                                     opts.budget.rounds, candidates,
                                     best_us > 0
                                         ? fmt::format("{:.1f} us vs {} {:.1f} us", best_us, baseline_name, baseline_us)
                                         : std::string("none yet")));
      return;
    }
    if (e.kind != search::SearchEvent::Kind::candidate_done || e.node == nullptr) return;
    ++candidates;
    if (e.node->correct() && (best_us == 0 || e.node->candidate_us < best_us)) {
      best_us = e.node->candidate_us;
      baseline_us = e.node->baseline_us;
    }
    // Restarts show as they happen (status), not only when the search ends.
    for (; restarts_seen < backend_->restarts(); ++restarts_seen) progress.worker_restarted();
    worker_pid_.store(backend_->worker_pid(), std::memory_order_relaxed);
    if (e.node->verdict == "not_evaluated") return;
    if (e.node->correct()) progress.candidate_evaluated();
    else progress.candidate_rejected(e.node->verdict);
    if (worker_was_lost(e.node->verdict)) progress.worker_lost(e.node->verdict);
  };
  // Issue 29 item 4: a miss-started search keeps to its share of the GPU (full speed at 1).
  DutyCycleBackend paced(*backend_, budgets.duty_cycle, progress, stop);
  // Issue 29: a range job (n=LO..HI) searches the candidates that serve every n of it and holds
  // them to the range gate (search/src/range/range_search.hpp).
  std::optional<search::range::RangeOutcome> ranged;
  search::SearchOutcome plain;
  if (gemm && gemm->is_range())
    ranged = search::range::run_range_search(*gemm, target, proposers, compiler_, &paced, opts, observer);
  else
    plain = search::run_search(op, target, proposers, compiler_, &paced, opts, observer);
  const search::SearchOutcome& out = ranged ? ranged->search : plain;
  for (; restarts_seen < backend_->restarts(); ++restarts_seen) progress.worker_restarted();
  worker_pid_.store(backend_->worker_pid(), std::memory_order_relaxed);

  // tools/dev/device-multi-gpu.sh reads this line: the job's key as queued and the runner's device.
  spdlog::info("search {} for {} on device {} ({}): {} ({} candidates)", out.tree.search_id(), job.key,
               device_.ordinal, device_.name, out.stop_reason, out.tree.nodes().size());
  JobOutcome result;
  result.search_id = out.tree.search_id();
  result.tree_json = out.tree.to_json().dump();
  if (stop.stop_requested()) {
    result.kind = JobOutcome::Kind::stopped;
    result.reason = "stopped";
    return result;
  }
  const search::RecordVersions versions{search::nvrtc_version(), cu().driver_version, 0};
  if (const auto best = out.tree.best()) {
    result.best_us = out.tree.node(*best).candidate_us;
    result.baseline_us = out.tree.node(*best).baseline_us;
  }
  if (ranged) {
    if (!ranged->winner) {
      result.kind = JobOutcome::Kind::no_improvement;
      result.reason = "no range winner: " + ranged->reason;
      return result;
    }
    result.kind = JobOutcome::Kind::winner;
    result.winner = search::range::make_range_record(*ranged, gemm->full_line(), versions);
    return result;
  }
  if (!out.winner) {
    const auto best = out.tree.best();
    std::string why = best ? fmt::format("best correct candidate {} us did not beat {} {} us by the margin",
                                         std::to_string(out.tree.node(*best).candidate_us), baseline_name,
                                         std::to_string(out.tree.node(*best).baseline_us))
                           : "no correct candidate (" + out.stop_reason + ")";
    result.kind = JobOutcome::Kind::no_improvement;
    result.reason = why;
    return result;
  }
  result.kind = JobOutcome::Kind::winner;
  result.winner = search::make_record(out, *out.winner, op_full_line(op), versions);
  return result;
}

}  // namespace kd::daemon
