// EvalBackend over the sandboxed kdispatch-worker (worker/worker_parent.hpp): the production path
// for untrusted candidates, and the source of cuBLASLt algorithms. A hang or crash becomes a
// verdict (or an enumeration error) and a fresh worker.
#pragma once

#include <chrono>
#include <optional>

#include "driver/search_driver.hpp"
#include "eval/roofline.hpp"
#include "worker/worker_parent.hpp"

namespace kd::search {

class WorkerBackend final : public EvalBackend, public AlgoSource {
public:
  WorkerBackend(worker::WorkerSpawn spawn, std::chrono::milliseconds watchdog);
  eval::Verdict evaluate(const eval::EvalRequest& request) override;
  double floor_us(const GemmKey& key) override;
  std::optional<eval::Roofline> roofline() override;
  AlgoSource* algo_source() override { return this; }
  // Enumerates in the worker (under the same watchdog); a worker that cannot start is an error
  // text here, not an exception.
  std::variant<cublaslt::Enumeration, std::string> cublaslt_algos(
      const GemmKey& key, const cublaslt::EnumerationOptions& options) override;
  // Starts the worker now; returns its ready message ({"arch","gpu","roofline",...}). Throws
  // kd::Error when no worker can start (no GPU, no worker binary).
  const nlohmann::json& start();
  int restarts() const noexcept { return worker_.restarts(); }
  pid_t worker_pid() const noexcept { return worker_.pid(); }  // 0 while none runs

private:
  worker::WorkerParent worker_;
  std::chrono::milliseconds watchdog_;
  std::optional<eval::Roofline> roofline_;
};

}  // namespace kd::search
