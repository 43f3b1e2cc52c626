#include "runtime/stats_reporter.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/dispatcher.hpp"
#include "registry/fallback_reason.hpp"

namespace kd {

std::string make_instance_id() {
  struct {
    std::uint64_t random = 0;
    std::int64_t clock = 0;
    pid_t pid = 0;
  } seed;
  // Best effort: without entropy the pid and the clock still tell processes apart.
  [[maybe_unused]] const ssize_t n = ::getrandom(&seed.random, sizeof seed.random, GRND_NONBLOCK);
  seed.clock = std::chrono::steady_clock::now().time_since_epoch().count();
  seed.pid = ::getpid();
  return fmt::format("{:016x}", XXH3_64bits(&seed, sizeof seed));
}

std::string sanitized_program_name(std::string_view name) {
  std::string out(name.substr(0, protocol::kMaxProgramBytes));
  for (char& ch : out)
    if (ch < 0x20 || ch > 0x7e) ch = '?';
  return out;
}

StatsReporter::StatsReporter()
    : base_(EpochDomain::instance().counter_totals()),
      base_loads_(dispatcher_counters().loads.load(std::memory_order_relaxed)),
      base_swaps_(dispatcher_counters().swaps.load(std::memory_order_relaxed)),
      pid_(::getpid()),
      program_(sanitized_program_name(program_invocation_short_name)),
      instance_(make_instance_id()) {}

protocol::ClientStats StatsReporter::snapshot() const {
  const auto now = EpochDomain::instance().counter_totals();
  // Counters only grow; the guard keeps a report sane should one ever be reset.
  const auto since = [](std::uint64_t v, std::uint64_t base) { return v >= base ? v - base : 0; };
  protocol::ClientStats s;
  s.pid = pid_;
  s.program = program_;
  s.instance = instance_;
  const auto hits = static_cast<std::size_t>(ThreadCounter::hits);
  const auto misses = static_cast<std::size_t>(ThreadCounter::misses);
  s.hits = since(now[hits], base_[hits]);
  s.misses = since(now[misses], base_[misses]);
  for (const FallbackReasonInfo& r : kFallbackReasons) {
    const std::size_t c = fallback_counter(r.reason);
    if (const std::uint64_t n = since(now[c], base_[c]); n > 0) s.fallbacks.emplace(r.name, n);
  }
  const DispatcherCounters& d = dispatcher_counters();
  s.loads = since(d.loads.load(std::memory_order_relaxed), base_loads_);
  s.swaps = since(d.swaps.load(std::memory_order_relaxed), base_swaps_);
  return s;
}

void StatsReporter::tick(DaemonConnection& daemon, Clock::time_point now) {
  const std::uint64_t session = daemon.stats_session();
  if (session == 0) return;
  const bool new_session = session != last_session_;
  if (!new_session && now < next_look_) return;
  next_look_ = now + kReportInterval;
  protocol::ClientStats s = snapshot();
  if (!new_session && last_sent_ && s == *last_sent_) return;
  daemon.send_stats(s);
  last_session_ = session;
  last_sent_ = std::move(s);
}

void StatsReporter::finish(DaemonConnection& daemon) noexcept {
  try {
    protocol::ClientStats s = snapshot();
    s.final = true;
    daemon.send_final_stats(s);
  } catch (...) {
    // out of memory at exit: the daemon keeps the last periodic report
  }
}

}  // namespace kd
