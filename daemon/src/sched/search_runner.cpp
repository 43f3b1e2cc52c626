#include "sched/search_runner.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/driver.hpp"
#include "driver/gpu_target.hpp"
#include "driver/search_driver.hpp"
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

}  // namespace

SearchJobRunner::SearchJobRunner(const DeviceInfo& device, const Config& config)
    : device_(device), cache_dir_(config.cache_dir), default_proposer_(config.proposer),
      proposer_settings_(proposer_settings(config)),
      compiler_(compile_options(config)),
      backend_(std::make_unique<search::WorkerBackend>(
          worker::default_worker_spawn(device.ordinal, config.cache_dir), kWatchdog)) {}

DevicePart SearchJobRunner::device() const { return {device_.arch, device_.name, device_.sms}; }

JobOutcome SearchJobRunner::run(const Job& job, const Budgets& budgets, Progress& progress,
                                std::stop_token stop) {
  auto parsed = parse_key(job.key);
  if (auto* err = std::get_if<KeyError>(&parsed)) return {JobOutcome::Kind::failed, std::nullopt, err->message};
  GemmKey key = std::get<GemmKey>(parsed);
  if (!key.device) key = key.with_device(device());
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

  const int restarts_before = backend_->restarts();
  try {
    backend_->start();
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
                                     best_us > 0 ? fmt::format("{:.1f} us vs cuBLAS {:.1f} us", best_us, baseline_us)
                                                 : std::string("none yet")));
      return;
    }
    if (e.kind != search::SearchEvent::Kind::candidate_done || e.node == nullptr) return;
    ++candidates;
    if (e.node->correct() && (best_us == 0 || e.node->candidate_us < best_us)) {
      best_us = e.node->candidate_us;
      baseline_us = e.node->baseline_us;
    }
    if (e.node->verdict == "not_evaluated") return;
    if (e.node->correct()) progress.candidate_evaluated();
    else progress.candidate_rejected(e.node->verdict);
  };
  search::SearchOutcome out =
      search::run_search(key, target, proposers, compiler_, backend_.get(), opts, observer);
  for (int i = restarts_before; i < backend_->restarts(); ++i) progress.worker_restarted();

  spdlog::info("search {} for {}: {} ({} candidates)", out.tree.search_id(), key.shape_line(),
               out.stop_reason, out.tree.nodes().size());
  JobOutcome result;
  result.search_id = out.tree.search_id();
  result.tree_json = out.tree.to_json().dump();
  if (stop.stop_requested()) {
    result.kind = JobOutcome::Kind::stopped;
    result.reason = "stopped";
    return result;
  }
  if (!out.winner) {
    const auto best = out.tree.best();
    std::string why = best ? "best correct candidate " + std::to_string(out.tree.node(*best).candidate_us) +
                                 " us did not beat cuBLAS " + std::to_string(out.tree.node(*best).baseline_us) +
                                 " us by the margin"
                           : "no correct candidate (" + out.stop_reason + ")";
    result.kind = JobOutcome::Kind::no_improvement;
    result.reason = why;
    return result;
  }
  const search::RecordVersions versions{search::nvrtc_version(), cu().driver_version, 0};
  result.kind = JobOutcome::Kind::winner;
  result.winner = search::make_record(out, *out.winner, key.full_line(), versions);
  return result;
}

}  // namespace kd::daemon
