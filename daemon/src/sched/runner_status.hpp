// What each search runner (one kdispatch-worker on one GPU) is doing: the `runners` list of the
// status reply (daemon/PROTOCOL.md), `kdctl status` and the kdispatch_runner_* gauges of /metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "key/gemm_key.hpp"
#include "protocol/status.hpp"

namespace kd::daemon {

enum class RunnerState : std::uint8_t {
  idle,        // no job its GPU may run is queued
  searching,   // running the search of `key`
  restarting,  // its worker was lost: a fresh one starts at the next evaluation, or (between jobs,
               // after a worker that did not start) the runner waits before it claims again
};
std::string_view to_string(RunnerState s);

struct RunnerStatus {
  std::size_t index = 0;  // position in the scheduler (the order of `workers`)
  int ordinal = -1;       // CUDA device ordinal; -1 when the runner has none
  DevicePart device;
  RunnerState state = RunnerState::idle;
  std::string key;        // the job being searched (searching; restarting inside a search)
  std::string progress;   // the search's last progress line, or why the runner restarts
  int worker_pid = 0;     // its kdispatch-worker, 0 while none runs
  std::uint64_t jobs_finished = 0;  // runs that ended with an outcome: published, done or failed
  std::uint64_t published = 0;      // of those, winners published
  std::uint64_t workers_lost = 0;   // workers restarted after a crash or hang, or that did not start
  // The GPU policy (issue 29 item 4): the held job's origin and share of the GPU (0 while idle),
  // and since the daemon started how long evaluations kept the GPU busy and how long the runner
  // paused between them to stay within its jobs' shares.
  std::string origin;
  double duty_cycle = 0;
  std::chrono::milliseconds evaluating{0};
  std::chrono::milliseconds paused{0};
};

// One entry of the status reply's `runners` (texts cut to `max_text_bytes`), and as JSON.
protocol::RunnerEntry runner_entry(const RunnerStatus& r, std::size_t max_text_bytes);
nlohmann::json to_json(const RunnerStatus& r, std::size_t max_text_bytes);

// The kdispatch_runner_* families: per runner (labels runner, device, gpu) whether it searches and
// what it has done since the daemon started. No keys, no paths.
std::string runners_prometheus_text(const std::vector<RunnerStatus>& runners);

}  // namespace kd::daemon
