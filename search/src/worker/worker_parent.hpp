// The parent side of a kdispatch-worker: spawns it, sends evaluations (and cuBLASLt enumerations),
// enforces the watchdog, and turns a worker that hangs or dies into a verdict (or an error text). One WorkerParent per GPU; not
// thread-safe (one evaluation at a time, as the GPU runs one candidate at a time).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluator.hpp"
#include "eval/verdict.hpp"
#include "worker/frame.hpp"
#include "worker/protocol.hpp"

namespace kd::worker {

struct WorkerSpawn {
  // Program and arguments; argv[0] without a '/' is looked up in PATH.
  std::vector<std::string> argv;
  std::chrono::milliseconds startup_timeout{180'000};  // includes a first roofline measurement
};

// argv for the kdispatch-worker next to the running executable (else found in PATH).
WorkerSpawn default_worker_spawn(int device_ordinal, const std::filesystem::path& roofline_dir);

class ChildProcess;

class WorkerParent {
public:
  // Starts nothing yet: the first evaluate() spawns the worker.
  explicit WorkerParent(WorkerSpawn spawn);
  ~WorkerParent();  // asks the worker to stop; kills it if it does not within a second
  WorkerParent(const WorkerParent&) = delete;
  WorkerParent& operator=(const WorkerParent&) = delete;

  // Runs one evaluation in the worker, waiting at most `watchdog` for its verdict (the gate and
  // timing of a candidate take seconds; a hung kernel takes forever). Outcomes:
  //   the worker's verdict;
  //   hang_timeout: no verdict before the watchdog; the worker was killed;
  //   crashed: the worker died (signal or exit) or reported a lost CUDA context and exited.
  // After the last two the next call starts a fresh worker. Throws kd::Error only when a worker
  // cannot be started (spawn failure, a `fatal` start message, no `ready` in time).
  eval::Verdict evaluate(const eval::EvalRequest& request, std::chrono::milliseconds watchdog);

  // Asks the worker for the cuBLASLt algorithms of a key (eval/cublaslt_enumeration.hpp), waiting
  // at most `watchdog`. The worker's answer, or an error text: the worker's own (cuBLASLt missing,
  // key for another GPU), or that it hung (killed) or died; after those two the next call starts
  // a fresh worker. Throws kd::Error only when a worker cannot be started.
  EnumerationResult enumerate_cublaslt(const EnumerateRequest& request, std::chrono::milliseconds watchdog);

  // Spawns the worker now if none runs; returns its ready message.
  const nlohmann::json& ensure_started();

  int restarts() const noexcept { return restarts_; }  // workers started after the first
  pid_t pid() const noexcept;                           // 0 when none runs

private:
  struct Lost {
    eval::Rule rule;  // hang_timeout, crashed, internal_error
    std::string why;
  };
  // Sends `request` and reads the reply of the same id and `reply_type`. A worker that hangs, dies
  // or answers nonsense is killed and reaped (Lost); the next call starts a fresh one.
  std::variant<Frame, Lost> exchange(Frame request, std::uint64_t id, const std::string& reply_type,
                                     std::chrono::milliseconds watchdog);
  eval::Verdict worker_lost(eval::Rule rule, const std::string& why);

  WorkerSpawn spawn_;
  std::unique_ptr<ChildProcess> child_;
  nlohmann::json ready_;
  std::uint64_t next_id_ = 1;
  int starts_ = 0;
  int restarts_ = 0;
};

}  // namespace kd::worker
