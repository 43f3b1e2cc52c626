#include "protocol/status.hpp"

namespace kd::protocol {

using nlohmann::json;

void to_json(json& j, const JobEntry& m) {
  j = {{"key", m.key}, {"state", m.state}};
  field::put_optional(j, "count", m.count);
  field::put_optional(j, "priority", m.priority);
  field::put_optional(j, "attempts", m.attempts);
  field::put_optional(j, "reason", m.reason);
  field::put_optional(j, "progress", m.progress);
}
void from_json(const json& j, JobEntry& m) {
  field::required(j, "key", m.key);
  field::required(j, "state", m.state);
  field::optional(j, "count", m.count);
  field::optional(j, "priority", m.priority);
  field::optional(j, "attempts", m.attempts);
  field::optional(j, "reason", m.reason);
  field::optional(j, "progress", m.progress);
}

void to_json(json& j, const SearchBackend& m) { j = {{"available", m.available}, {"message", m.message}}; }
void from_json(const json& j, SearchBackend& m) {
  field::required(j, "available", m.available);
  field::optional(j, "message", m.message);
}

void to_json(json& j, const JobCounts& m) {
  j = {{"queued", m.queued},
       {"running", m.running},
       {"done", m.done},
       {"failed", m.failed},
       {"cancelled", m.cancelled}};
}
void from_json(const json& j, JobCounts& m) {
  field::required(j, "queued", m.queued);
  field::required(j, "running", m.running);
  field::required(j, "done", m.done);
  field::required(j, "failed", m.failed);
  field::required(j, "cancelled", m.cancelled);
}

void to_json(json& j, const ClientCounters& m) {
  j = {{"hits", m.hits},   {"misses", m.misses},           {"fallbacks", m.fallbacks},
       {"calls", m.calls}, {"fallbacks_total", m.fallbacks_total}, {"loads", m.loads},
       {"swaps", m.swaps}};
}
void from_json(const json& j, ClientCounters& m) {
  field::required(j, "hits", m.hits);
  field::required(j, "misses", m.misses);
  field::required(j, "fallbacks", m.fallbacks);
  field::required(j, "fallbacks_total", m.fallbacks_total);
  field::required(j, "calls", m.calls);
  field::required(j, "loads", m.loads);
  field::required(j, "swaps", m.swaps);
}

void to_json(json& j, const Bounds& m) {
  j = {{"max_cache_bytes", m.max_cache_bytes}, {"cache_bytes", m.cache_bytes},
       {"records_evicted", m.records_evicted}, {"max_queued_jobs", m.max_queued_jobs},
       {"jobs_dropped", m.jobs_dropped},       {"job_retention_s", m.job_retention_s},
       {"jobs_purged", m.jobs_purged},         {"usage_dropped", m.usage_dropped},
       {"jobs_indexing", m.jobs_indexing}};
}
void from_json(const json& j, Bounds& m) {
  field::required(j, "max_cache_bytes", m.max_cache_bytes);
  field::required(j, "cache_bytes", m.cache_bytes);
  field::required(j, "records_evicted", m.records_evicted);
  field::required(j, "max_queued_jobs", m.max_queued_jobs);
  field::required(j, "jobs_dropped", m.jobs_dropped);
  field::required(j, "job_retention_s", m.job_retention_s);
  field::required(j, "jobs_purged", m.jobs_purged);
  field::optional(j, "usage_dropped", m.usage_dropped);
  field::optional(j, "jobs_indexing", m.jobs_indexing);
}

void to_json(json& j, const RemoteCounts& m) {
  j = m.counts;
  j["rejected"] = m.rejected;
  j["mismatched"] = m.mismatched;
}
void from_json(const json& j, RemoteCounts& m) {
  field::optional(j, "rejected", m.rejected);
  field::optional(j, "mismatched", m.mismatched);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "rejected" || it.key() == "mismatched") continue;
    field::read(it.value(), it.key(), m.counts[it.key()]);
  }
}

void to_json(json& j, const RemoteStatus& m) {
  j = {{"url", m.url},
       {"connected", m.connected},
       {"last_error", m.last_error},
       {"trust", m.trust},
       {"gate", m.gate},
       {"prefix", m.prefix},
       {"owner", m.owner},
       {"lease_ms", m.lease_ms},
       {"leases_held", m.leases_held},
       {"pending_pushes", m.pending_pushes},
       {"verifying", m.verifying},
       {"held_back", m.held_back},
       {"counters", m.counters}};
}
void from_json(const json& j, RemoteStatus& m) {
  field::required(j, "url", m.url);
  field::required(j, "connected", m.connected);
  field::required(j, "last_error", m.last_error);
  field::required(j, "trust", m.trust);
  field::required(j, "gate", m.gate);
  field::required(j, "prefix", m.prefix);
  field::required(j, "owner", m.owner);
  field::required(j, "lease_ms", m.lease_ms);
  field::required(j, "leases_held", m.leases_held);
  field::required(j, "pending_pushes", m.pending_pushes);
  field::required(j, "verifying", m.verifying);
  field::required(j, "held_back", m.held_back);
  field::required(j, "counters", m.counters);
}

void to_json(json& j, const RunnerEntry& m) {
  j = {{"index", m.index},           {"ordinal", m.ordinal},
       {"gpu", m.gpu},               {"arch", m.arch},
       {"sms", m.sms},               {"state", m.state},
       {"worker_pid", m.worker_pid}, {"jobs_finished", m.jobs_finished},
       {"published", m.published},   {"workers_lost", m.workers_lost},
       {"evaluating_ms", m.evaluating_ms}, {"paused_ms", m.paused_ms}};
  field::put_optional(j, "key", m.key);
  field::put_optional(j, "origin", m.origin);
  field::put_optional(j, "duty_cycle", m.duty_cycle);
  field::put_optional(j, "progress", m.progress);
}
void from_json(const json& j, RunnerEntry& m) {
  field::required(j, "index", m.index);
  field::required(j, "ordinal", m.ordinal);
  field::required(j, "gpu", m.gpu);
  field::required(j, "arch", m.arch);
  field::required(j, "sms", m.sms);
  field::required(j, "state", m.state);
  field::required(j, "worker_pid", m.worker_pid);
  field::required(j, "jobs_finished", m.jobs_finished);
  field::required(j, "published", m.published);
  field::required(j, "workers_lost", m.workers_lost);
  field::optional(j, "evaluating_ms", m.evaluating_ms);
  field::optional(j, "paused_ms", m.paused_ms);
  field::optional(j, "key", m.key);
  field::optional(j, "origin", m.origin);
  field::optional(j, "duty_cycle", m.duty_cycle);
  field::optional(j, "progress", m.progress);
}

void to_json(json& j, const SearchPolicy& m) {
  j = {{"search_duty_cycle", m.search_duty_cycle}, {"prewarm_duty_cycle", m.prewarm_duty_cycle}};
}
void from_json(const json& j, SearchPolicy& m) {
  field::required(j, "search_duty_cycle", m.search_duty_cycle);
  field::required(j, "prewarm_duty_cycle", m.prewarm_duty_cycle);
}

void to_json(json& j, const Status& m) {
  j = {{"daemon", m.daemon},
       {"pid", m.pid},
       {"uptime_s", m.uptime_s},
       {"generation", m.generation},
       {"cache_dir", m.cache_dir},
       {"socket", m.socket},
       {"search_backend", m.search_backend},
       {"jobs", m.jobs},
       {"queue_depth", m.queue_depth},
       {"clients", m.clients},
       {"subscribers", m.subscribers},
       {"running", m.running},
       {"transactions_committed", m.transactions_committed},
       {"clients_reporting", m.clients_reporting}};
  field::put_optional(j, "client_totals", m.client_totals);
  field::put_optional(j, "bounds", m.bounds);
  field::put_optional(j, "remote", m.remote);
  field::put_optional(j, "runners", m.runners);
  field::put_optional(j, "search_policy", m.search_policy);
  field::put_optional(j, "top_jobs", m.top_jobs);
  field::put_optional(j, "top_jobs_omitted", m.top_jobs_omitted);
}
void from_json(const json& j, Status& m) {
  field::required(j, "daemon", m.daemon);
  field::required(j, "pid", m.pid);
  field::required(j, "uptime_s", m.uptime_s);
  field::required(j, "generation", m.generation);
  field::required(j, "cache_dir", m.cache_dir);
  field::required(j, "socket", m.socket);
  field::required(j, "search_backend", m.search_backend);
  field::required(j, "jobs", m.jobs);
  field::required(j, "queue_depth", m.queue_depth);
  field::required(j, "clients", m.clients);
  field::required(j, "subscribers", m.subscribers);
  field::required(j, "running", m.running);
  field::required(j, "transactions_committed", m.transactions_committed);
  field::optional(j, "clients_reporting", m.clients_reporting);
  field::optional(j, "client_totals", m.client_totals);
  field::optional(j, "bounds", m.bounds);
  field::optional(j, "remote", m.remote);
  field::optional(j, "runners", m.runners);
  field::optional(j, "search_policy", m.search_policy);
  field::optional(j, "top_jobs", m.top_jobs);
  field::optional(j, "top_jobs_omitted", m.top_jobs_omitted);
}

void to_json(json& j, const LiveClient& m) {
  j = m.counters;
  j["pid"] = m.pid;
  j["program"] = m.program;
  j["instance"] = m.instance;
  j["first_report_unix_ms"] = m.first_report_unix_ms;
  j["last_report_unix_ms"] = m.last_report_unix_ms;
}
void from_json(const json& j, LiveClient& m) {
  from_json(j, m.counters);
  field::required(j, "pid", m.pid);
  field::required(j, "program", m.program);
  field::required(j, "instance", m.instance);
  field::required(j, "first_report_unix_ms", m.first_report_unix_ms);
  field::required(j, "last_report_unix_ms", m.last_report_unix_ms);
}

void to_json(json& j, const ClientsReport& m) {
  j = {{"since_unix_ms", m.since_unix_ms}, {"processes_seen", m.processes_seen},
       {"processes_live", m.processes_live}, {"live_omitted", m.live_omitted},
       {"totals", m.totals},               {"live", m.live}};
}
void from_json(const json& j, ClientsReport& m) {
  field::required(j, "since_unix_ms", m.since_unix_ms);
  field::required(j, "processes_seen", m.processes_seen);
  field::required(j, "processes_live", m.processes_live);
  field::optional(j, "live_omitted", m.live_omitted);
  field::required(j, "totals", m.totals);
  field::required(j, "live", m.live);
}

void to_json(json& j, const Stats& m) {
  j = {{"counters", m.counters},
       {"candidates_rejected", m.candidates_rejected},
       {"generation", m.generation},
       {"transactions_committed", m.transactions_committed}};
  field::put_optional(j, "clients", m.clients);
}
void from_json(const json& j, Stats& m) {
  field::required(j, "counters", m.counters);
  field::required(j, "candidates_rejected", m.candidates_rejected);
  field::required(j, "generation", m.generation);
  field::required(j, "transactions_committed", m.transactions_committed);
  field::optional(j, "clients", m.clients);
}

}  // namespace kd::protocol
