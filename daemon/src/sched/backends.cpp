#include "sched/job_runner.hpp"

#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "sched/search_runner.hpp"

namespace kd::daemon {
namespace {

// Device ordinals named by `workers`: "auto" = every device, a comma list = those.
std::vector<int> worker_ordinals(const std::string& workers, int count) {
  std::vector<int> out;
  if (workers == "auto") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  std::istringstream in(workers);
  for (std::string item; std::getline(in, item, ',');) {
    const int ordinal = std::stoi(item);
    if (ordinal < 0 || ordinal >= count)
      throw std::invalid_argument(fmt::format("workers: device {} does not exist ({} found)", ordinal, count));
    out.push_back(ordinal);
  }
  return out;
}

}  // namespace

// One search runner (one kdispatch-worker) per GPU named by `workers`.
Backends make_backends(const Config& config) {
  Backends b;
  if (config.workers == "none") {
    b.why_none = "no search backend: workers = none";
    return b;
  }
  if (cu_driver() == nullptr) {
    b.why_none = "no search backend: " + cu_unavailable_reason();
    return b;
  }
  const int count = cu_device_count();
  if (count == 0) {
    b.why_none = "no search backend: the CUDA driver reports no device";
    return b;
  }
  try {
    for (const int ordinal : worker_ordinals(config.workers, count)) {
      const DeviceInfo dev = query_device(ordinal);
      b.runners.push_back(std::make_unique<SearchJobRunner>(dev, config));
      spdlog::info("search runner on device {}: {} ({}, {} SMs)", ordinal, dev.name, dev.arch, dev.sms);
    }
  } catch (const std::exception& e) {
    b.runners.clear();
    b.why_none = std::string("no search backend: ") + e.what();
  }
  return b;
}

}  // namespace kd::daemon
