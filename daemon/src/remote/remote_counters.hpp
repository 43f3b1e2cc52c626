// The remote tier's counters, numbered in one table (remote_counters.cpp) and never reused, and
// their Prometheus exposition (kdispatch_remote_<name>_total, appended to /metrics).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "http/prometheus.hpp"
#include "protocol/status.hpp"

namespace kd::daemon {

enum class RemoteCounter : std::uint8_t {
  lookups,           // keys looked up in the tier (misses of this daemon)
  hits,              // lookups that found a value
  imports,           // records from the tier committed to this cache and pushed to clients
  pushes,            // records of this cache written to the tier
  leases_taken,      // searches this daemon started under a lease
  lease_waits,       // claimed jobs put back because another daemon held the lease
  lease_takeovers,   // leases taken on a key whose earlier holder stopped renewing (died)
  leases_lost,       // leases that expired under this daemon while it searched (it was stalled)
  finished_elsewhere,  // jobs closed by another daemon's done marker
  unverified,        // records held back: they need this machine's gate and it cannot run here
  outages,           // times the link to Redis was lost
  searched_unleased, // searches started without a lease because Redis was unreachable
  count_,
};

class RemoteCounters {
public:
  void add(RemoteCounter c, std::uint64_t n = 1) noexcept { counters_.add(c, n); }
  std::uint64_t get(RemoteCounter c) const noexcept { return counters_.get(c); }
  // Values refused, by reason (RemoteRejection or RemoteMismatch names).
  void add_rejected(std::string_view reason) { rejected_.add(reason); }
  void add_mismatched(std::string_view reason) { mismatched_.add(reason); }

  // What the status reply's remote.counters holds (protocol/status.hpp), and its JSON.
  protocol::RemoteCounts counts() const;
  nlohmann::json to_json() const;
  // The families kdispatch_remote_*; `connected` is the link's state now.
  std::string prometheus_text(bool connected) const;

private:
  CounterArray<RemoteCounter> counters_;
  LabelledCounter rejected_, mismatched_;
};

}  // namespace kd::daemon
