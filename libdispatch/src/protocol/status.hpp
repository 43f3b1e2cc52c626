// The daemon's `status` and `stats` replies and their parts (PROTOCOL.md), with their JSON
// conversions (codec.hpp). The daemon fills them; kdctl and the tests read them.
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
};

struct SearchBackend {
  bool available = false;
  std::string message;
  bool operator==(const SearchBackend&) const = default;
};

// Jobs per state.
struct JobCounts {
  std::uint64_t queued = 0;
  std::uint64_t running = 0;
  std::uint64_t done = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled = 0;
  bool operator==(const JobCounts&) const = default;
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
};
// status.search_policy: the GPU's share a search may take, by who queued its job (issue 29).
struct SearchPolicy {
  double search_duty_cycle = 1;
  double prewarm_duty_cycle = 1;
  bool operator==(const SearchPolicy&) const = default;
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
};

void to_json(nlohmann::json& j, const JobEntry& m);
void from_json(const nlohmann::json& j, JobEntry& m);
void to_json(nlohmann::json& j, const SearchBackend& m);
void from_json(const nlohmann::json& j, SearchBackend& m);
void to_json(nlohmann::json& j, const JobCounts& m);
void from_json(const nlohmann::json& j, JobCounts& m);
void to_json(nlohmann::json& j, const ClientCounters& m);
void from_json(const nlohmann::json& j, ClientCounters& m);
void to_json(nlohmann::json& j, const Bounds& m);
void from_json(const nlohmann::json& j, Bounds& m);
void to_json(nlohmann::json& j, const RemoteCounts& m);
void from_json(const nlohmann::json& j, RemoteCounts& m);
void to_json(nlohmann::json& j, const RemoteStatus& m);
void from_json(const nlohmann::json& j, RemoteStatus& m);
void to_json(nlohmann::json& j, const RunnerEntry& m);
void from_json(const nlohmann::json& j, RunnerEntry& m);
void to_json(nlohmann::json& j, const SearchPolicy& m);
void from_json(const nlohmann::json& j, SearchPolicy& m);
void to_json(nlohmann::json& j, const Status& m);
void from_json(const nlohmann::json& j, Status& m);
void to_json(nlohmann::json& j, const LiveClient& m);
void from_json(const nlohmann::json& j, LiveClient& m);
void to_json(nlohmann::json& j, const ClientsReport& m);
void from_json(const nlohmann::json& j, ClientsReport& m);
void to_json(nlohmann::json& j, const Stats& m);
void from_json(const nlohmann::json& j, Stats& m);

}  // namespace kd::protocol
