// The JobRunner over the branching search: one per GPU, each with its own kdispatch-worker and
// compile service. Proposers: builtin always; llm and cublaslt on top when the job's proposer (or
// else the config's `proposer` list) names them. cublaslt enumerates in the same worker.
#pragma once

#include <atomic>
#include <memory>

#include "compile/compile_service.hpp"
#include "cuda/device.hpp"
#include "driver/proposer_table.hpp"
#include "driver/worker_backend.hpp"
#include "sched/job_runner.hpp"

namespace kd::daemon {

class SearchJobRunner final : public JobRunner {
public:
  SearchJobRunner(const DeviceInfo& device, const Config& config);
  DevicePart device() const override;
  int device_ordinal() const override { return device_.ordinal; }
  int worker_pid() const override { return worker_pid_.load(std::memory_order_relaxed); }
  JobOutcome run(const Job& job, const Budgets& budgets, Progress& progress,
                 std::stop_token stop) override;

private:
  // Starts the worker if none runs. Starts on one device are serialized (workers = "0,0"): a
  // first start measures the GPU's bandwidth for the roofline, and two measuring at once would
  // each see about half of it and store a floor that rejects fast candidates.
  void start_worker();

  std::atomic<int> worker_pid_{0};  // written by the runner's thread, read by status
  DeviceInfo device_;
  std::filesystem::path cache_dir_;
  std::string default_proposer_;
  search::ProposerSettings proposer_settings_;  // the llm_* keys; the token budget is per job
  search::CompileService compiler_;
  std::unique_ptr<search::WorkerBackend> backend_;
};

}  // namespace kd::daemon
