// The GPU policy of a search (issue 29 item 4): its evaluations take at most a share of its GPU's
// time (the duty cycle; Budgets::duty_cycle), so that a search started by an application's miss
// leaves that application its speed. After each evaluation the run pauses until the evaluation's
// busy time is at most `duty_cycle` of the time since the previous evaluation ended (an idle gap
// before it, such as a round's compiles, counts towards the pause). The evaluation's wall time is
// taken as the GPU's busy time: an upper bound, since the worker also works on the host.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>

#include "driver/search_driver.hpp"
#include "sched/job_runner.hpp"

namespace kd::daemon {

// The pause owed after an evaluation that kept the GPU busy `busy`, when the GPU had already been
// idle `idle_before` since the previous evaluation (and its pause) ended: busy x (1 - d) / d minus
// idle_before, at least zero. A duty cycle of 1 (or more) owes nothing. Requires duty_cycle > 0.
std::chrono::milliseconds pause_after(double duty_cycle, std::chrono::milliseconds busy,
                                      std::chrono::milliseconds idle_before);

// Waits `pause` or until `stop` fires, whichever comes first.
void pause_unless_stopped(std::chrono::milliseconds pause, std::stop_token stop);

// An EvalBackend that runs `inner`'s evaluations within `duty_cycle` of the GPU's time and reports
// each one's busy and paused time through `progress` (status, /metrics). Everything else is
// `inner`'s. One run's; not thread-safe (the search evaluates one candidate at a time).
class DutyCycleBackend final : public search::EvalBackend {
public:
  using Pause = std::function<void(std::chrono::milliseconds, std::stop_token)>;
  DutyCycleBackend(search::EvalBackend& inner, double duty_cycle, Progress& progress, std::stop_token stop,
                   Pause pause = pause_unless_stopped);

  eval::Verdict evaluate(const eval::EvalRequest& request) override;
  double floor_us(const GemmKey& key) override { return inner_.floor_us(key); }
  std::optional<eval::Roofline> roofline() override { return inner_.roofline(); }
  search::AlgoSource* algo_source() override { return inner_.algo_source(); }

private:
  using Clock = std::chrono::steady_clock;
  search::EvalBackend& inner_;
  double duty_cycle_;
  Progress& progress_;
  std::stop_token stop_;
  Pause pause_;
  std::optional<Clock::time_point> idle_since_;  // when the last evaluation's pause ended
};

}  // namespace kd::daemon
