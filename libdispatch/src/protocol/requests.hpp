// The operator's requests to kdispatchd (kdctl, tests, benchmarks) and their replies (PROTOCOL.md),
// with their JSON conversions (codec.hpp). A request's `Reply` is the struct its answer decodes
// to; the daemon may answer any request with ErrorMessage instead (messages.hpp). The messages
// libkdispatch also speaks (hello, miss, subscribe, client_stats, usage) are in messages.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/codec.hpp"
#include "protocol/messages.hpp"
#include "protocol/status.hpp"

namespace kd::protocol {

// A key a request named that the daemon did not take, and why (at most 16 per reply; the key cut
// to 502 bytes, the message to 512).
struct RejectedKey {
  std::string key;
  std::string message;
  bool operator==(const RejectedKey&) const = default;
};

// The reply to a Miss with `ack`, after the commit.
struct MissAck {
  static constexpr std::string_view kType = "ok";
  std::uint64_t accepted = 0;
  std::vector<RejectedKey> rejected;
  bool operator==(const MissAck&) const = default;
};

struct PrewarmOk {
  static constexpr std::string_view kType = "ok";
  std::uint64_t queued = 0;
  std::vector<RejectedKey> rejected;  // keys that do not parse, and keys the bound on queued jobs refused
  bool operator==(const PrewarmOk&) const = default;
};
// Per-job search budgets; 0: the daemon's configured default (and left out on the wire).
struct PrewarmBudgets {
  std::uint64_t rounds = 0;
  std::uint64_t candidates = 0;
  std::uint64_t wall_seconds = 0;
  std::uint64_t llm_tokens = 0;
  bool operator==(const PrewarmBudgets&) const = default;
};
struct Prewarm {
  static constexpr std::string_view kType = "prewarm";
  using Reply = PrewarmOk;
  std::vector<std::string> keys;  // key lines
  std::string proposer;           // a comma list ("builtin,cublaslt"); empty: the daemon's
  PrewarmBudgets budgets;
  bool operator==(const Prewarm&) const = default;
};

// At most this many top jobs in a status reply (an entry is at most ~1.1 KB): larger asks are cut.
inline constexpr std::uint64_t kMaxTopJobs = 500;
struct StatusQuery {
  static constexpr std::string_view kType = "status";
  using Reply = Status;
  std::uint64_t jobs = 0;  // also list the top N jobs (at most kMaxTopJobs)
  bool operator==(const StatusQuery&) const = default;
};

// The jobs of given keys, for a client that follows its own: at most kMaxJobsPerRequest keys, so
// that the reply fits a frame.
inline constexpr std::size_t kMaxJobsPerRequest = 500;
struct JobsReply {
  static constexpr std::string_view kType = "jobs";
  std::vector<JobEntry> jobs;  // per key asked, in order, `key` as sent
  std::optional<std::uint64_t> jobs_omitted;
  bool operator==(const JobsReply&) const = default;
};
struct JobsQuery {
  static constexpr std::string_view kType = "jobs";
  using Reply = JobsReply;
  std::vector<std::string> keys;
  bool operator==(const JobsQuery&) const = default;
};

struct CacheChangedOk {
  static constexpr std::string_view kType = "ok";
  std::uint64_t generation = 0;
  std::uint64_t previous_generation = 0;
  std::uint64_t subscribers = 0;
  bool operator==(const CacheChangedOk&) const = default;
};
// Another process (kdctl import or evict) wrote or removed the records of `keys` (full key lines;
// may be empty: some records changed), `count` records in all.
struct CacheChanged {
  static constexpr std::string_view kType = "cache_changed";
  using Reply = CacheChangedOk;
  std::vector<std::string> keys;
  std::optional<std::uint64_t> count;
  bool operator==(const CacheChanged&) const = default;
};

struct StatsQuery {
  static constexpr std::string_view kType = "stats";
  using Reply = Stats;
  bool operator==(const StatsQuery&) const = default;
};

struct StatsZeroed {
  static constexpr std::string_view kType = "ok";
  bool zeroed = true;
  bool operator==(const StatsZeroed&) const = default;
};
struct ZeroStats {
  static constexpr std::string_view kType = "zero_stats";
  using Reply = StatsZeroed;
  bool operator==(const ZeroStats&) const = default;
};

struct CancelOk {
  static constexpr std::string_view kType = "ok";
  bool cancelled = false;              // false: the job was not queued or running
  std::optional<std::string> message;  // the parser's message for a key that does not parse
  bool operator==(const CancelOk&) const = default;
};
struct Cancel {
  static constexpr std::string_view kType = "cancel";
  using Reply = CancelOk;
  std::string key;
  bool operator==(const Cancel&) const = default;
};

// Finished jobs removed (or, with dry_run, counted) per state.
struct PurgedJobs {
  std::uint64_t done = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled = 0;
  bool operator==(const PurgedJobs&) const = default;
};
struct PurgeOk {
  static constexpr std::string_view kType = "ok";
  PurgedJobs removed;
  std::uint64_t total = 0;
  bool dry_run = false;
  bool operator==(const PurgeOk&) const = default;
};
struct Purge {
  static constexpr std::string_view kType = "purge";
  using Reply = PurgeOk;
  std::vector<std::string> states;  // done, failed, cancelled; empty: all three
  std::uint64_t older_than_s = 0;   // 0: every finished job
  bool dry_run = false;
  bool operator==(const Purge&) const = default;
};

struct ShutdownOk {
  static constexpr std::string_view kType = "ok";
  bool operator==(const ShutdownOk&) const = default;
};
struct Shutdown {
  static constexpr std::string_view kType = "shutdown";
  using Reply = ShutdownOk;
  bool operator==(const Shutdown&) const = default;
};

void to_json(nlohmann::json& j, const RejectedKey& m);
void from_json(const nlohmann::json& j, RejectedKey& m);
void to_json(nlohmann::json& j, const MissAck& m);
void from_json(const nlohmann::json& j, MissAck& m);
void to_json(nlohmann::json& j, const PrewarmOk& m);
void from_json(const nlohmann::json& j, PrewarmOk& m);
void to_json(nlohmann::json& j, const PrewarmBudgets& m);
void from_json(const nlohmann::json& j, PrewarmBudgets& m);
void to_json(nlohmann::json& j, const Prewarm& m);
void from_json(const nlohmann::json& j, Prewarm& m);
void to_json(nlohmann::json& j, const StatusQuery& m);
void from_json(const nlohmann::json& j, StatusQuery& m);
void to_json(nlohmann::json& j, const JobsReply& m);
void from_json(const nlohmann::json& j, JobsReply& m);
void to_json(nlohmann::json& j, const JobsQuery& m);
void from_json(const nlohmann::json& j, JobsQuery& m);
void to_json(nlohmann::json& j, const CacheChangedOk& m);
void from_json(const nlohmann::json& j, CacheChangedOk& m);
void to_json(nlohmann::json& j, const CacheChanged& m);
void from_json(const nlohmann::json& j, CacheChanged& m);
void to_json(nlohmann::json& j, const StatsQuery& m);
void from_json(const nlohmann::json& j, StatsQuery& m);
void to_json(nlohmann::json& j, const StatsZeroed& m);
void from_json(const nlohmann::json& j, StatsZeroed& m);
void to_json(nlohmann::json& j, const ZeroStats& m);
void from_json(const nlohmann::json& j, ZeroStats& m);
void to_json(nlohmann::json& j, const CancelOk& m);
void from_json(const nlohmann::json& j, CancelOk& m);
void to_json(nlohmann::json& j, const Cancel& m);
void from_json(const nlohmann::json& j, Cancel& m);
void to_json(nlohmann::json& j, const PurgedJobs& m);
void from_json(const nlohmann::json& j, PurgedJobs& m);
void to_json(nlohmann::json& j, const PurgeOk& m);
void from_json(const nlohmann::json& j, PurgeOk& m);
void to_json(nlohmann::json& j, const Purge& m);
void from_json(const nlohmann::json& j, Purge& m);
void to_json(nlohmann::json& j, const ShutdownOk& m);
void from_json(const nlohmann::json& j, ShutdownOk& m);
void to_json(nlohmann::json& j, const Shutdown& m);
void from_json(const nlohmann::json& j, Shutdown& m);

}  // namespace kd::protocol
