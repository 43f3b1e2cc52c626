#include "sched/duty_cycle.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace kd::daemon {

std::chrono::milliseconds pause_after(double duty_cycle, std::chrono::milliseconds busy,
                                      std::chrono::milliseconds idle_before) {
  if (duty_cycle >= 1.0 || busy.count() <= 0) return std::chrono::milliseconds(0);
  const double owed_ms = static_cast<double>(busy.count()) * (1.0 - duty_cycle) / duty_cycle;
  const auto owed = std::chrono::milliseconds(static_cast<std::int64_t>(owed_ms + 0.5));
  return std::max(std::chrono::milliseconds(0), owed - idle_before);
}

void pause_unless_stopped(std::chrono::milliseconds pause, std::stop_token stop) {
  if (pause.count() <= 0) return;
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, pause, [] { return false; });
}

DutyCycleBackend::DutyCycleBackend(search::EvalBackend& inner, double duty_cycle, Progress& progress,
                                   std::stop_token stop, Pause pause)
    : inner_(inner), duty_cycle_(duty_cycle), progress_(progress), stop_(std::move(stop)), pause_(std::move(pause)) {}

eval::Verdict DutyCycleBackend::evaluate(const eval::EvalRequest& request) {
  const auto started = Clock::now();
  const auto idle_before = idle_since_ ? std::chrono::duration_cast<std::chrono::milliseconds>(started - *idle_since_)
                                       : std::chrono::milliseconds(0);
  eval::Verdict verdict = inner_.evaluate(request);
  const auto busy = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  if (const auto now = progress_.duty_cycle_now(); now && *now > 0) duty_cycle_ = *now;
  const auto pause = pause_after(duty_cycle_, busy, idle_before);
  const auto pause_started = Clock::now();
  if (pause.count() > 0 && !stop_.stop_requested()) pause_(pause, stop_);
  idle_since_ = Clock::now();
  progress_.gpu_time(busy, std::chrono::duration_cast<std::chrono::milliseconds>(*idle_since_ - pause_started));
  return verdict;
}

}  // namespace kd::daemon
