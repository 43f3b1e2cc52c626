// EvalBackend over the sandboxed kdispatch-worker (worker/worker_client.hpp): the production path
// for untrusted candidates. A hang or crash becomes a verdict and a fresh worker.
#pragma once

#include <chrono>
#include <optional>

#include "driver/search_driver.hpp"
#include "eval/roofline.hpp"
#include "worker/worker_client.hpp"

namespace kd::search {

class WorkerBackend final : public EvalBackend {
public:
  WorkerBackend(worker::WorkerSpawn spawn, std::chrono::milliseconds watchdog);
  eval::Verdict evaluate(const eval::EvalRequest& request) override;
  double floor_us(const GemmKey& key) override;
  std::optional<eval::Roofline> roofline() override;
  // Starts the worker now; returns its ready message ({"arch","gpu","roofline",...}). Throws
  // kd::Error when no worker can start (no GPU, no worker binary).
  const nlohmann::json& start();
  int restarts() const noexcept { return client_.restarts(); }

private:
  worker::WorkerClient client_;
  std::chrono::milliseconds watchdog_;
  std::optional<eval::Roofline> roofline_;
};

}  // namespace kd::search
