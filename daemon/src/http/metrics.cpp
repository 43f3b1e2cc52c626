#include "http/metrics.hpp"

#include <fmt/format.h>

namespace kd::daemon {
namespace {

struct CounterInfo {
  Counter counter;
  std::string_view name;
  std::string_view help;
};

// One row per counter; the Prometheus name is kdispatch_<name>_total.
constexpr CounterInfo kCounters[] = {
    {Counter::misses_reported, "misses_reported", "Cache misses reported by clients (calls)."},
    {Counter::miss_keys_received, "miss_keys_received", "Key entries received in miss messages."},
    {Counter::miss_keys_rejected, "miss_keys_rejected", "Miss or prewarm keys that did not parse."},
    {Counter::client_hits, "client_hits", "Cache hits reported by clients (calls)."},
    {Counter::frames_received, "frames_received", "Protocol frames received."},
    {Counter::protocol_errors, "protocol_errors",
     "Clients answered with an error frame and dropped for a protocol violation."},
    {Counter::clients_accepted, "clients_accepted", "Connections accepted."},
    {Counter::clients_refused, "clients_refused",
     "Connections refused: peer uid not allowed or too many clients."},
    {Counter::clients_dropped, "clients_dropped",
     "Clients dropped for stalling inside a frame or not reading replies."},
    {Counter::candidates_evaluated, "candidates_evaluated", "Candidate kernels evaluated on a GPU."},
    {Counter::winners_published, "winners_published", "Winning kernels committed to the cache."},
    {Counter::worker_restarts, "worker_restarts", "kdispatch-worker restarts after a crash or hang."},
    {Counter::jobs_failed, "jobs_failed", "Jobs that ran out of attempts."},
    {Counter::client_stats_received, "client_stats_received",
     "Counter reports (client_stats) received from client applications."},
    {Counter::client_stats_rejected, "client_stats_rejected",
     "Counter reports rejected because a counter went down since the same process's last report."},
};
static_assert(std::size(kCounters) == static_cast<std::size_t>(Counter::count_));

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}


}  // namespace

std::string escape_label(std::string_view v) {
  std::string out;
  for (const char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

void Metrics::add_rejected(std::string_view reason, std::uint64_t n) {
  const std::lock_guard lock(rejected_mu_);
  const auto it = rejected_.find(reason);
  if (it == rejected_.end()) rejected_.emplace(std::string(reason), n);
  else it->second += n;
}

std::map<std::string, std::uint64_t> Metrics::rejected() const {
  const std::lock_guard lock(rejected_mu_);
  return {rejected_.begin(), rejected_.end()};
}

std::string_view counter_name(Counter c) { return kCounters[static_cast<std::size_t>(c)].name; }

std::string prometheus_text(const Metrics& m, const Gauges& g, const ClientCounters& c) {
  std::string out;
  for (const auto& info : kCounters) {
    const std::string name = fmt::format("kdispatch_{}_total", info.name);
    family(out, name, "counter", info.help);
    out += fmt::format("{} {}\n", name, m.get(info.counter));
  }
  family(out, "kdispatch_candidates_rejected_total", "counter",
         "Candidates rejected by the validation gate or timing, by reason.");
  for (const auto& [reason, n] : m.rejected())
    out += fmt::format("kdispatch_candidates_rejected_total{{reason=\"{}\"}} {}\n",
                       escape_label(reason), n);

  family(out, "kdispatch_queue_depth", "gauge", "Jobs queued and waiting for a search.");
  out += fmt::format("kdispatch_queue_depth {}\n",
                     g.jobs.by_state[static_cast<std::size_t>(JobState::queued)]);
  family(out, "kdispatch_jobs", "gauge", "Jobs in the persistent queue by state.");
  for (std::size_t s = 0; s < kJobStateCount; ++s)
    out += fmt::format("kdispatch_jobs{{state=\"{}\"}} {}\n", to_string(static_cast<JobState>(s)),
                       g.jobs.by_state[s]);
  family(out, "kdispatch_clients_connected", "gauge", "Connected clients.");
  out += fmt::format("kdispatch_clients_connected {}\n", g.clients_connected);
  family(out, "kdispatch_subscribers", "gauge", "Clients subscribed to published notices.");
  out += fmt::format("kdispatch_subscribers {}\n", g.subscribers);
  family(out, "kdispatch_cache_generation", "gauge", "The cache's generation counter.");
  out += fmt::format("kdispatch_cache_generation {}\n", g.generation);
  family(out, "kdispatch_search_backend_available", "gauge",
         "1 when a search backend runs jobs, 0 when jobs stay queued.");
  out += fmt::format("kdispatch_search_backend_available {}\n", g.search_backend ? 1 : 0);
  // The bounds (sched/maintenance.hpp); counted since the daemon started.
  family(out, "kdispatch_cache_bytes", "gauge", "Bytes the cache's records occupy (max_cache_bytes bounds it).");
  out += fmt::format("kdispatch_cache_bytes {}\n", g.cache_bytes);
  struct Removed {
    std::string_view name;
    std::uint64_t value;
    std::string_view help;
  };
  const Removed removed[] = {
      {"records_evicted", g.bounds.records_evicted,
       "Records evicted as least recently used to keep the cache under max_cache_bytes."},
      {"jobs_purged", g.bounds.jobs_purged, "Finished jobs purged (job_retention_s or kdctl purge)."},
      {"jobs_dropped", g.bounds.jobs_dropped,
       "Queued jobs displaced, or new jobs refused, to keep the queue under max_queued_jobs."},
  };
  for (const Removed& r : removed) {
    const std::string name = fmt::format("kdispatch_{}_total", r.name);
    family(out, name, "counter", r.help);
    out += fmt::format("{} {}\n", name, r.value);
  }

  // Client applications' calls, as their processes report them (client_stats). Persisted across
  // daemon restarts; `kdctl stats --zero` starts them over (a counter reset to Prometheus).
  struct AppCounter {
    std::string_view name;
    std::uint64_t value;
    std::string_view help;
  };
  const AppCounter app[] = {
      {"hits", c.totals.hits, "Calls of client applications that ran a tuned kernel."},
      {"misses", c.totals.misses,
       "Calls of client applications that found no usable tuned kernel (lookup-stage fallbacks)."},
      {"loads", c.totals.loads, "Tuned kernels client applications loaded from the cache."},
      {"swaps", c.totals.swaps, "Loaded kernels client applications replaced by a newer record (hot-swaps)."},
  };
  for (const AppCounter& a : app) {
    const std::string full = fmt::format("kdispatch_app_{}_total", a.name);
    family(out, full, "counter", a.help);
    out += fmt::format("{} {}\n", full, a.value);
  }
  family(out, "kdispatch_app_fallbacks_total", "counter",
         "Calls of client applications that ran the vendor library, by reason.");
  for (const auto& [reason, n] : c.totals.fallbacks)
    out += fmt::format("kdispatch_app_fallbacks_total{{reason=\"{}\"}} {}\n", escape_label(reason), n);
  family(out, "kdispatch_app_processes_reporting", "gauge",
         "Client application processes connected and reporting their counters.");
  out += fmt::format("kdispatch_app_processes_reporting {}\n", c.processes_live);
  return out;
}

}  // namespace kd::daemon
