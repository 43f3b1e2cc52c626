#include "sched/runner_status.hpp"

#include <array>

#include <fmt/format.h>

#include "http/metrics.hpp"
#include "protocol/messages.hpp"

namespace kd::daemon {
namespace {

constexpr std::array<std::string_view, 3> kStateNames{"idle", "searching", "restarting"};

}  // namespace

std::string_view to_string(RunnerState s) { return kStateNames.at(static_cast<std::size_t>(s)); }

protocol::RunnerEntry runner_entry(const RunnerStatus& r, std::size_t max_text_bytes) {
  protocol::RunnerEntry e;
  e.index = r.index;
  e.ordinal = r.ordinal;
  e.gpu = r.device.gpu;
  e.arch = r.device.arch;
  e.sms = r.device.sms;
  e.state = std::string(to_string(r.state));
  e.worker_pid = r.worker_pid;
  e.jobs_finished = r.jobs_finished;
  e.published = r.published;
  e.workers_lost = r.workers_lost;
  e.evaluating_ms = r.evaluating.count();
  e.paused_ms = r.paused.count();
  if (!r.key.empty()) e.key = protocol::truncate_utf8(r.key, max_text_bytes);
  if (!r.origin.empty()) {
    e.origin = r.origin;
    e.duty_cycle = r.duty_cycle;
  }
  if (!r.progress.empty()) e.progress = protocol::truncate_utf8(r.progress, max_text_bytes);
  return e;
}

nlohmann::json to_json(const RunnerStatus& r, std::size_t max_text_bytes) { return runner_entry(r, max_text_bytes); }

std::string runners_prometheus_text(const std::vector<RunnerStatus>& runners) {
  struct Family {
    std::string_view name, type, help;
    std::uint64_t (*value)(const RunnerStatus&);
  };
  static constexpr Family kFamilies[] = {
      {"kdispatch_runner_searching", "gauge", "1 while the search runner searches, else 0 (idle or restarting).",
       [](const RunnerStatus& r) -> std::uint64_t { return r.state == RunnerState::searching ? 1 : 0; }},
      {"kdispatch_runner_jobs_finished_total", "counter",
       "Jobs the search runner finished (published, done or failed) since the daemon started.",
       [](const RunnerStatus& r) { return r.jobs_finished; }},
      {"kdispatch_runner_published_total", "counter", "Winners the search runner published since the daemon started.",
       [](const RunnerStatus& r) { return r.published; }},
      {"kdispatch_runner_workers_lost_total", "counter",
       "kdispatch-workers of the search runner that crashed, hung or did not start, since the daemon started.",
       [](const RunnerStatus& r) { return r.workers_lost; }},
      {"kdispatch_runner_evaluating_milliseconds_total", "counter",
       "Time the search runner's evaluations kept its GPU busy, since the daemon started.",
       [](const RunnerStatus& r) { return static_cast<std::uint64_t>(r.evaluating.count()); }},
      {"kdispatch_runner_paused_milliseconds_total", "counter",
       "Time the search runner paused between evaluations to keep its searches within their share of the GPU "
       "(search_duty_cycle, prewarm_duty_cycle), since the daemon started.",
       [](const RunnerStatus& r) { return static_cast<std::uint64_t>(r.paused.count()); }},
  };
  std::string out;
  if (runners.empty()) return out;
  for (const Family& f : kFamilies) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (const RunnerStatus& r : runners)
      out += fmt::format("{}{{runner=\"{}\",device=\"{}\",gpu=\"{}\"}} {}\n", f.name, r.index, r.ordinal,
                         escape_label(r.device.gpu), f.value(r));
  }
  return out;
}

}  // namespace kd::daemon
