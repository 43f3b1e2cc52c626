// The daemon's `status` and `stats` replies and their parts (PROTOCOL.md), with their wire
// fields (codec.hpp). The daemon fills them; kdctl and the tests read them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/codec.hpp"

namespace kd::protocol {

// A job as the status (top_jobs) and jobs replies show it. A jobs entry for a key without a job has
// only `key` and `state` ("unknown"), one for a key that does not parse `key`, `state` ("invalid")
// and `reason`; a job has every field but `progress`, which only a running job has.
struct JobEntry {
  std::string key;
  std::string state;  // queued, running, done, failed, cancelled; unknown, invalid (jobs reply)
  std::optional<std::uint64_t> count;
  std::optional<double> priority;
  std::optional<std::uint64_t> attempts;
  std::optional<std::string> reason;    // at most 256 bytes from the daemon
  std::optional<std::string> progress;  // at most 256 bytes from the daemon
  bool operator==(const JobEntry&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("key", m.key);
    v.required("state", m.state);
    v.optional("count", m.count);
    v.optional("priority", m.priority);
    v.optional("attempts", m.attempts);
    v.optional("reason", m.reason);
    v.optional("progress", m.progress);
  }
};

struct SearchBackend {
  bool available = false;
  std::string message;
  bool operator==(const SearchBackend&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("available", m.available);
    v.defaulted("message", m.message);
  }
};

// Jobs per state.
struct JobCounts {
  std::uint64_t queued = 0;
  std::uint64_t running = 0;
  std::uint64_t done = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled = 0;
  bool operator==(const JobCounts&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("queued", m.queued);
    v.required("running", m.running);
    v.required("done", m.done);
    v.required("failed", m.failed);
    v.required("cancelled", m.cancelled);
  }
};

// Client applications' call counters (PROTOCOL.md, Client counters): `calls` = hits +
// fallbacks_total, every call ends as one of the two.
struct ClientCounters {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::map<std::string, std::uint64_t> fallbacks;
  std::uint64_t fallbacks_total = 0;
  std::uint64_t calls = 0;
  std::uint64_t loads = 0;
  std::uint64_t swaps = 0;
  bool operator==(const ClientCounters&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("hits", m.hits);
    v.required("misses", m.misses);
    v.required("fallbacks", m.fallbacks);
    v.required("fallbacks_total", m.fallbacks_total);
    v.required("calls", m.calls);
    v.required("loads", m.loads);
    v.required("swaps", m.swaps);
  }
};

// status.bounds: the limits on the cache and the queue and what they did since the daemon started.
struct Bounds {
  std::uint64_t max_cache_bytes = 0;
  std::uint64_t cache_bytes = 0;
  std::uint64_t records_evicted = 0;
  std::uint64_t max_queued_jobs = 0;
  std::uint64_t jobs_dropped = 0;
  std::int64_t job_retention_s = 0;
  std::uint64_t jobs_purged = 0;
  std::uint64_t usage_dropped = 0;
  bool jobs_indexing = false;
  bool operator==(const Bounds&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("max_cache_bytes", m.max_cache_bytes);
    v.required("cache_bytes", m.cache_bytes);
    v.required("records_evicted", m.records_evicted);
    v.required("max_queued_jobs", m.max_queued_jobs);
    v.required("jobs_dropped", m.jobs_dropped);
    v.required("job_retention_s", m.job_retention_s);
    v.required("jobs_purged", m.jobs_purged);
    v.defaulted("usage_dropped", m.usage_dropped);
    v.defaulted("jobs_indexing", m.jobs_indexing);
  }
};

// The fleet's remote tier's counters: one count per name ("imports", "pushes", ...; README's
// fleet section), with the rejected and mismatched records by reason. On the wire one object:
// the counts' names, "rejected" and "mismatched".
struct RemoteCounts {
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, std::uint64_t> rejected;
  std::map<std::string, std::uint64_t> mismatched;
  bool operator==(const RemoteCounts&) const = default;
};
void to_json(nlohmann::json& j, const RemoteCounts& m);
void from_json(const nlohmann::json& j, RemoteCounts& m);

// status.remote: only with a remote tier.
struct RemoteStatus {
  std::string url;
  bool connected = false;
  std::string last_error;
  std::string trust;
  std::string gate;
  std::string prefix;
  std::string owner;
  std::int64_t lease_ms = 0;
  std::uint64_t leases_held = 0;
  std::uint64_t pending_pushes = 0;
  std::uint64_t verifying = 0;
  std::uint64_t held_back = 0;
  RemoteCounts counters;
  bool operator==(const RemoteStatus&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("url", m.url);
    v.required("connected", m.connected);
    v.required("last_error", m.last_error);
    v.required("trust", m.trust);
    v.required("gate", m.gate);
    v.required("prefix", m.prefix);
    v.required("owner", m.owner);
    v.required("lease_ms", m.lease_ms);
    v.required("leases_held", m.leases_held);
    v.required("pending_pushes", m.pending_pushes);
    v.required("verifying", m.verifying);
    v.required("held_back", m.held_back);
    v.required("counters", m.counters);
  }
};

// status.runners: one per search runner (daemon/src/sched/runner_status.hpp): its GPU, what it
// does (`state` idle, searching or restarting; `key` and `progress` cut to 256 bytes), what it has
// done since the daemon started, and the GPU policy's share for the job it holds (`origin` miss or
// prewarm, `duty_cycle`) with the time its evaluations took and the time it paused for the policy.
struct RunnerEntry {
  std::uint64_t index = 0;
  std::int64_t ordinal = -1;
  std::string gpu;
  std::string arch;
  std::int64_t sms = 0;
  std::string state;
  std::int64_t worker_pid = 0;
  std::uint64_t jobs_finished = 0;
  std::uint64_t published = 0;
  std::uint64_t workers_lost = 0;
  std::int64_t evaluating_ms = 0;
  std::int64_t paused_ms = 0;
  std::optional<std::string> key;
  std::optional<std::string> origin;
  std::optional<double> duty_cycle;
  std::optional<std::string> progress;
  bool operator==(const RunnerEntry&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("index", m.index);
    v.required("ordinal", m.ordinal);
    v.required("gpu", m.gpu);
    v.required("arch", m.arch);
    v.required("sms", m.sms);
    v.required("state", m.state);
    v.required("worker_pid", m.worker_pid);
    v.required("jobs_finished", m.jobs_finished);
    v.required("published", m.published);
    v.required("workers_lost", m.workers_lost);
    v.defaulted("evaluating_ms", m.evaluating_ms);
    v.defaulted("paused_ms", m.paused_ms);
    v.optional("key", m.key);
    v.optional("origin", m.origin);
    v.optional("duty_cycle", m.duty_cycle);
    v.optional("progress", m.progress);
  }
};
// status.search_policy: the GPU's share a search may take, by who queued its job (issue 29).
struct SearchPolicy {
  double search_duty_cycle = 1;
  double prewarm_duty_cycle = 1;
  bool operator==(const SearchPolicy&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("search_duty_cycle", m.search_duty_cycle);
    v.required("prewarm_duty_cycle", m.prewarm_duty_cycle);
  }
};
// The reply to StatusQuery (requests.hpp).
struct Status {
  static constexpr std::string_view kType = "status";
  std::string daemon;  // kdispatchd's version
  std::int64_t pid = 0;
  std::int64_t uptime_s = 0;
  std::uint64_t generation = 0;
  std::string cache_dir;
  std::string socket;
  SearchBackend search_backend;
  JobCounts jobs;
  std::uint64_t queue_depth = 0;
  std::uint64_t clients = 0;
  std::uint64_t subscribers = 0;
  std::vector<std::string> running;  // keys of the running jobs
  std::uint64_t transactions_committed = 0;
  std::uint64_t clients_reporting = 0;
  std::optional<ClientCounters> client_totals;  // absent from daemons older than client_stats
  std::optional<Bounds> bounds;                 // absent from daemons older than the bounds
  std::optional<RemoteStatus> remote;
  std::optional<std::vector<RunnerEntry>> runners;  // absent from daemons older than issue 31
  std::optional<SearchPolicy> search_policy;        // absent from daemons older than issue 29
  std::optional<std::vector<JobEntry>> top_jobs;  // when asked for
  std::optional<std::uint64_t> top_jobs_omitted;  // when the list was cut to fit a frame
  bool operator==(const Status&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("daemon", m.daemon);
    v.required("pid", m.pid);
    v.required("uptime_s", m.uptime_s);
    v.required("generation", m.generation);
    v.required("cache_dir", m.cache_dir);
    v.required("socket", m.socket);
    v.required("search_backend", m.search_backend);
    v.required("jobs", m.jobs);
    v.required("queue_depth", m.queue_depth);
    v.required("clients", m.clients);
    v.required("subscribers", m.subscribers);
    v.required("running", m.running);
    v.required("transactions_committed", m.transactions_committed);
    v.defaulted("clients_reporting", m.clients_reporting);
    v.optional("client_totals", m.client_totals);
    v.optional("bounds", m.bounds);
    v.optional("remote", m.remote);
    v.optional("runners", m.runners);
    v.optional("search_policy", m.search_policy);
    v.optional("top_jobs", m.top_jobs);
    v.optional("top_jobs_omitted", m.top_jobs_omitted);
  }
};

// One live client process in the stats reply: its last cumulative counters.
struct LiveClient {
  std::int64_t pid = 0;
  std::string program;
  std::string instance;
  std::int64_t first_report_unix_ms = 0;
  std::int64_t last_report_unix_ms = 0;
  ClientCounters counters;  // on the wire, beside the fields above
  bool operator==(const LiveClient&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.merged(m.counters);
    v.required("pid", m.pid);
    v.required("program", m.program);
    v.required("instance", m.instance);
    v.required("first_report_unix_ms", m.first_report_unix_ms);
    v.required("last_report_unix_ms", m.last_report_unix_ms);
  }
};

// stats.clients: totals since since_unix_ms, and the live processes with the most calls
// (`live_omitted` = processes_live - live.size()).
struct ClientsReport {
  std::int64_t since_unix_ms = 0;
  std::uint64_t processes_seen = 0;
  std::uint64_t processes_live = 0;
  std::uint64_t live_omitted = 0;
  ClientCounters totals;
  std::vector<LiveClient> live;
  bool operator==(const ClientsReport&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("since_unix_ms", m.since_unix_ms);
    v.required("processes_seen", m.processes_seen);
    v.required("processes_live", m.processes_live);
    v.defaulted("live_omitted", m.live_omitted);
    v.required("totals", m.totals);
    v.required("live", m.live);
  }
};

// The reply to StatsQuery (requests.hpp). Counter names as in /metrics without kdispatch_ and _total.
struct Stats {
  static constexpr std::string_view kType = "stats";
  std::map<std::string, std::uint64_t> counters;
  std::map<std::string, std::uint64_t> candidates_rejected;  // by reason
  std::uint64_t generation = 0;
  std::uint64_t transactions_committed = 0;
  std::optional<ClientsReport> clients;  // absent from daemons older than client_stats
  bool operator==(const Stats&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("counters", m.counters);
    v.required("candidates_rejected", m.candidates_rejected);
    v.required("generation", m.generation);
    v.required("transactions_committed", m.transactions_committed);
    v.optional("clients", m.clients);
  }
};


}  // namespace kd::protocol
