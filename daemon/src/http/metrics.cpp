#include "http/metrics.hpp"

#include <fmt/format.h>

namespace kd::daemon {
namespace {

// One row per counter; the Prometheus name is kdispatch_<name>_total.
constexpr CounterRow<Counter> kCounters[] = {
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
    {Counter::vendor_verdicts, "vendor_verdicts_published",
     "Searches that kept the vendor call, committed to the cache as vendor verdicts."},
    {Counter::worker_restarts, "worker_restarts", "kdispatch-worker restarts after a crash or hang."},
    {Counter::jobs_failed, "jobs_failed", "Jobs that ran out of attempts."},
    {Counter::client_stats_received, "client_stats_received",
     "Counter reports (client_stats) received from client applications."},
    {Counter::client_stats_rejected, "client_stats_rejected",
     "Counter reports rejected because a counter went down since the same process's last report."},
};
static_assert(std::size(kCounters) == static_cast<std::size_t>(Counter::count_));

}  // namespace

std::string_view counter_name(Counter c) { return kCounters[static_cast<std::size_t>(c)].name; }

std::string prometheus_text(const Metrics& m, const Gauges& g, const ClientCounters& c) {
  std::string out;
  append_counters(out, "", std::span<const CounterRow<Counter>>(kCounters), m);
  append_labelled_counter(out, "kdispatch_candidates_rejected_total",
                          "Candidates rejected by the validation gate or timing, by reason.", "reason", m.rejected());

  append_metric(out, "kdispatch_queue_depth", "gauge", "Jobs queued and waiting for a search.",
                g.jobs.of(JobState::queued));
  append_family(out, "kdispatch_jobs", "gauge", "Jobs in the persistent queue by state.");
  for (std::size_t s = 0; s < kJobStateCount; ++s)
    out += fmt::format("kdispatch_jobs{{state=\"{}\"}} {}\n", to_string(static_cast<JobState>(s)),
                       g.jobs.by_state[s]);
  append_metric(out, "kdispatch_clients_connected", "gauge", "Connected clients.", g.clients_connected);
  append_metric(out, "kdispatch_subscribers", "gauge", "Clients subscribed to published notices.", g.subscribers);
  append_metric(out, "kdispatch_cache_generation", "gauge", "The cache's generation counter.", g.generation);
  append_metric(out, "kdispatch_search_backend_available", "gauge",
                "1 when a search backend runs jobs, 0 when jobs stay queued.", g.search_backend ? 1 : 0);
  // The bounds (sched/maintenance.hpp); counted since the daemon started.
  append_metric(out, "kdispatch_cache_bytes", "gauge", "Bytes the cache's records occupy (max_cache_bytes bounds it).",
                g.cache_bytes);
  struct CounterValue {
    std::string_view name;  // kdispatch_<name>_total
    std::uint64_t value;
    std::string_view help;
  };
  const CounterValue removed[] = {
      {"records_evicted", g.bounds.records_evicted,
       "Records evicted as least recently used to keep the cache under max_cache_bytes."},
      {"jobs_purged", g.bounds.jobs_purged, "Finished jobs purged (job_retention_s or kdctl purge)."},
      {"jobs_dropped", g.bounds.jobs_dropped,
       "Queued jobs displaced, or new jobs refused, to keep the queue under max_queued_jobs."},
  };
  for (const CounterValue& r : removed)
    append_metric(out, fmt::format("kdispatch_{}_total", r.name), "counter", r.help, r.value);

  // Client applications' calls, as their processes report them (client_stats). Persisted across
  // daemon restarts; `kdctl stats --zero` starts them over (a counter reset to Prometheus).
  const CounterValue app[] = {
      {"app_hits", c.totals.hits, "Calls of client applications that ran a tuned kernel."},
      {"app_misses", c.totals.misses,
       "Calls of client applications that found no usable tuned kernel (lookup-stage fallbacks)."},
      {"app_loads", c.totals.loads, "Tuned kernels client applications loaded from the cache."},
      {"app_swaps", c.totals.swaps, "Loaded kernels client applications replaced by a newer record (hot-swaps)."},
  };
  for (const CounterValue& a : app)
    append_metric(out, fmt::format("kdispatch_{}_total", a.name), "counter", a.help, a.value);
  append_labelled_counter(out, "kdispatch_app_fallbacks_total",
                          "Calls of client applications that ran the vendor library, by reason.", "reason",
                          {c.totals.fallbacks.begin(), c.totals.fallbacks.end()});
  append_metric(out, "kdispatch_app_processes_reporting", "gauge",
                "Client application processes connected and reporting their counters.", c.processes_live);
  return out;
}

}  // namespace kd::daemon
