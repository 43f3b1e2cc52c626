// The seam between the daemon and the branching search.
//
// A JobRunner searches one job on one GPU: it owns (through search/src/worker's WorkerParent) one
// kdispatch-worker process on that GPU and the CPU compile pool it is given. The scheduler calls
// run() from its own thread, one job at a time per runner. The runner must return promptly (and
// with Kind::stopped) once the stop token fires: on shutdown or when the job is cancelled.
//
// Honesty rule: a runner returns Kind::winner only with a record that passed the validation gate
// and beat the vendor baseline as design.md requires. Without a GPU (or with workers = none) no
// runner exists; the daemon then keeps jobs queued and /status says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "key/gemm_key.hpp"
#include "queue/job.hpp"
#include "store/record.hpp"

namespace kd::daemon {

// Reports from inside a run, for metrics and /status. Called from the runner's thread.
class Progress {
public:
  virtual ~Progress() = default;
  virtual void candidate_evaluated() = 0;
  virtual void candidate_rejected(std::string_view reason) = 0;
  // The worker process was restarted after a crash or hang, and the run goes on.
  virtual void worker_restarted() = 0;
  // The worker died or hung under the candidate just evaluated (`why`); the next evaluation starts
  // a fresh one. Until the next candidate is done the runner shows as restarting.
  virtual void worker_lost(std::string_view why) = 0;
  // Where the search is, in words ("round 2 of 3, best 12.1 us, cuBLAS 14.2 us"), for /status.
  virtual void searching(std::string_view text) = 0;
  // An evaluation kept the GPU busy for `busy`; the run then paused `paused` to stay within its
  // duty cycle (Budgets::duty_cycle; sched/duty_cycle.hpp).
  virtual void gpu_time(std::chrono::milliseconds busy, std::chrono::milliseconds paused) = 0;
  // The duty cycle the run should keep from now on, asked before each pause: a search started by a
  // miss that `kdctl prewarm` then asks for goes on at the prewarm's share, and a SIGHUP's new
  // search_duty_cycle reaches searches already running. nullopt: the one the run started with.
  virtual std::optional<double> duty_cycle_now() { return std::nullopt; }
};

struct JobOutcome {
  enum class Kind : std::uint8_t {
    winner,          // `winner` holds a validated record faster than the baseline: publish it
    no_improvement,  // searched within budget, nothing beat the baseline: done, and a vendor
                     // verdict record is committed for the job's key (store/record.hpp)
    failed,          // the job cannot be searched (unsupported key, ...): failed, not retried
    worker_lost,     // the worker crashed or hung beyond recovery: retried with backoff
    stopped,         // the stop token fired: the job goes back to the queue (or stays cancelled)
  };
  Kind kind = Kind::stopped;
  std::optional<Record> winner;
  std::string reason;  // for every kind but winner: one line for users
  // no_improvement: the fastest correct candidate's and the vendor call's times (0: none), kept in
  // the vendor verdict.
  double best_us = 0;
  double baseline_us = 0;
  // The search tree (JSON) under its id, stored for every outcome that searched; empty otherwise.
  std::string search_id;
  std::string tree_json;
};

class JobRunner {
public:
  virtual ~JobRunner() = default;
  // The GPU this runner evaluates on. A job whose key names a device part is only given to a
  // runner whose device part is equal; a shape line without one goes to any runner, whose
  // winner record then carries the runner's full key line.
  virtual DevicePart device() const = 0;
  // The CUDA device ordinal it runs on, for status; -1 where it has none (test runners).
  virtual int device_ordinal() const { return -1; }
  // The process id of its kdispatch-worker now, 0 while none runs. Called from any thread.
  virtual int worker_pid() const { return 0; }
  // Effective budgets: the job's own where set, else the daemon's configured defaults; the duty
  // cycle by the job's origin (search_duty_cycle for a miss, prewarm_duty_cycle for a prewarm).
  virtual JobOutcome run(const Job& job, const Budgets& budgets, Progress& progress,
                         std::stop_token stop) = 0;
};

// The search backends this build can create, from the configuration. Empty when none is built;
// `why_none` then says so for /status.
struct Backends {
  std::vector<std::unique_ptr<JobRunner>> runners;
  std::string why_none;
};
Backends make_backends(const Config& config);

}  // namespace kd::daemon
