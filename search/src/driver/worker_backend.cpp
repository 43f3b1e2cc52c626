#include "driver/worker_backend.hpp"

namespace kd::search {

WorkerBackend::WorkerBackend(worker::WorkerSpawn spawn, std::chrono::milliseconds watchdog)
    : worker_(std::move(spawn)), watchdog_(watchdog) {}

const nlohmann::json& WorkerBackend::start() {
  const nlohmann::json& ready = worker_.ensure_started();
  if (!roofline_ && ready.contains("roofline")) roofline_ = eval::roofline_from_json(ready["roofline"]);
  return ready;
}

eval::Verdict WorkerBackend::evaluate(const eval::EvalRequest& request) {
  return worker_.evaluate(request, watchdog_);
}

std::variant<cublaslt::Enumeration, std::string> WorkerBackend::cublaslt_algos(
    const GemmKey& key, const cublaslt::EnumerationOptions& options) {
  try {
    return worker_.enumerate_cublaslt({key.device ? key.full_line() : key.shape_line(), options}, watchdog_);
  } catch (const std::exception& e) {
    return std::string("cuBLASLt enumeration: ") + e.what();
  }
}

double WorkerBackend::floor_us(const GemmKey& key) {
  start();
  return roofline_ ? eval::roofline_floor_s(key, *roofline_, 1.0) * 1e6 : 0.0;
}

std::optional<eval::Roofline> WorkerBackend::roofline() {
  start();
  return roofline_;
}

}  // namespace kd::search
