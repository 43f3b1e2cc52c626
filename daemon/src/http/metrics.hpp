// The daemon's counters and their Prometheus text exposition (format 0.0.4). Counters are
// numbered in one table (metrics.cpp, kCounters) and never reused; counters only go up.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "http/prometheus.hpp"
#include "queue/job_queue.hpp"
#include "stats/client_stats.hpp"

namespace kd::daemon {

enum class Counter : std::uint8_t {
  misses_reported,       // calls reported in miss messages (sum of counts)
  miss_keys_received,    // key entries in miss messages
  miss_keys_rejected,    // key entries that did not parse as a key
  client_hits,           // hits reported by clients
  frames_received,
  protocol_errors,       // frames answered with error and dropped
  clients_accepted,
  clients_refused,       // SO_PEERCRED uid not allowed, or too many clients
  clients_dropped,       // slow, hostile or not reading
  candidates_evaluated,
  winners_published,
  vendor_verdicts,        // searches that kept the vendor call, committed as vendor verdict records
  worker_restarts,
  jobs_failed,
  client_stats_received,  // client_stats reports counted
  client_stats_rejected,  // client_stats reports whose counters went down (ignored)
  count_,
};

class Metrics {
public:
  void add(Counter c, std::uint64_t n = 1) noexcept { counters_.add(c, n); }
  std::uint64_t get(Counter c) const noexcept { return counters_.get(c); }
  // Candidates the search rejected, by the verdict's reason (label value).
  void add_rejected(std::string_view reason, std::uint64_t n = 1) { rejected_.add(reason, n); }
  std::map<std::string, std::uint64_t> rejected() const { return rejected_.values(); }

private:
  CounterArray<Counter> counters_;
  LabelledCounter rejected_;
};

// The counter's name in stats JSON ("misses_reported") and Prometheus ("kdispatch_..._total").
std::string_view counter_name(Counter c);

// Point-in-time values the exposition reports as gauges.
struct Gauges {
  QueueCounts jobs;
  std::uint64_t clients_connected = 0;
  std::uint64_t subscribers = 0;
  std::uint64_t generation = 0;
  bool search_backend = false;
  QueueTallies bounds;           // what the bounds removed since the daemon started
  std::uint64_t cache_bytes = 0;  // the records' pages (JobQueue::records_bytes)
};

// What client applications reported (stats/client_stats.hpp): the persisted totals, exposed as
// kdispatch_app_* counters, and the processes reporting now.
struct ClientCounters {
  CallCounters totals;
  std::uint64_t processes_live = 0;
};

std::string prometheus_text(const Metrics& m, const Gauges& g, const ClientCounters& c);

}  // namespace kd::daemon
