// The process's call counters (hits, misses, fallbacks by reason, loads, swaps) reported to the
// daemon as client_stats messages, so that `kdctl stats` shows what applications saw.
//
// Reports are cumulative since the reporter was constructed (with its dispatcher, at kd_init):
// counts made before (by an earlier dispatcher of this process, or by the parent of a forked
// child, whose counters the child inherits) belong to another instance and are left out. The
// daemon counts the difference between two reports of one instance, so a lost report costs nothing
// and a repeated one counts nothing.
//
// Background thread only, except finish(), which runs after that thread has stopped.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/daemon_connection.hpp"
#include "protocol/messages.hpp"
#include "registry/epoch.hpp"

namespace kd {

class StatsReporter {
public:
  using Clock = std::chrono::steady_clock;
  // At most one report per interval, and only when a counter changed.
  static constexpr std::chrono::milliseconds kReportInterval{2000};

  // Takes the baseline (the counters now), a fresh instance id, the pid and the program name.
  StatsReporter();

  // The counters since construction.
  protocol::ClientStats snapshot() const;
  // Sends a report on `daemon` when it accepts them and this is a connection that has not had one
  // yet (so a restarted daemon learns the process at once), or when a counter changed and the
  // interval has passed since the last look.
  void tick(DaemonConnection& daemon, Clock::time_point now);
  // The final report (final: true), one non-blocking attempt. Requires that tick() is no longer
  // called (the background thread has stopped). Never throws, never blocks, makes no CUDA call.
  void finish(DaemonConnection& daemon) noexcept;

  const std::string& instance() const noexcept { return instance_; }

private:
  std::array<std::uint64_t, kThreadCounterCount> base_{};
  std::uint64_t base_loads_ = 0;
  std::uint64_t base_swaps_ = 0;
  std::int64_t pid_ = 0;
  std::string program_;
  std::string instance_;
  std::uint64_t last_session_ = 0;
  Clock::time_point next_look_{};
  std::optional<protocol::ClientStats> last_sent_;
};

// 16 hex digits from getrandom(), mixed with the pid and the clock (never fails).
std::string make_instance_id();

// The program's short name with bytes outside printable ASCII replaced by '?', at most
// protocol::kMaxProgramBytes long (the daemon's JSON must stay valid UTF-8).
std::string sanitized_program_name(std::string_view name);

}  // namespace kd
