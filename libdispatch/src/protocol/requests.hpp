// The operator's requests to kdispatchd (kdctl, tests, benchmarks) and their replies (PROTOCOL.md),
// with their wire fields (codec.hpp). A request's `Reply` is the struct its answer decodes to; the
// daemon may answer any request with ErrorMessage instead (messages.hpp). The messages
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

inline constexpr std::string_view kKeyLines = "an array of key lines";

// A key a request named that the daemon did not take, and why (at most 16 per reply; the key cut
// to 502 bytes, the message to 512).
struct RejectedKey {
  std::string key;
  std::string message;
  bool operator==(const RejectedKey&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("key", m.key);
    v.required("message", m.message);
  }
};

// The reply to a Miss with `ack`, after the commit.
struct MissAck {
  static constexpr std::string_view kType = "ok";
  std::uint64_t accepted = 0;
  std::vector<RejectedKey> rejected;
  bool operator==(const MissAck&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("accepted", m.accepted);
    v.required("rejected", m.rejected);
  }
};

struct PrewarmOk {
  static constexpr std::string_view kType = "ok";
  std::uint64_t queued = 0;
  std::vector<RejectedKey> rejected;  // keys that do not parse, and keys the bound on queued jobs refused
  bool operator==(const PrewarmOk&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("queued", m.queued);
    v.required("rejected", m.rejected);
  }
};
// Per-job search budgets; 0: the daemon's configured default (and left out on the wire).
struct PrewarmBudgets {
  std::uint64_t rounds = 0, candidates = 0, wall_seconds = 0, llm_tokens = 0;
  bool operator==(const PrewarmBudgets&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.optional("rounds", m.rounds);
    v.optional("candidates", m.candidates);
    v.optional("wall_seconds", m.wall_seconds);
    v.optional("llm_tokens", m.llm_tokens);
  }
};
struct Prewarm {
  static constexpr std::string_view kType = "prewarm";
  using Reply = PrewarmOk;
  std::vector<std::string> keys;  // key lines
  std::string proposer;           // a comma list ("builtin,cublaslt"); empty: the daemon's
  PrewarmBudgets budgets;
  bool operator==(const Prewarm&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("keys", m.keys, kKeyLines);
    v.optional("proposer", m.proposer);
    v.optional("budgets", m.budgets);
  }
};

// At most this many top jobs in a status reply (an entry is at most ~1.1 KB): larger asks are cut.
inline constexpr std::uint64_t kMaxTopJobs = 500;
struct StatusQuery {
  static constexpr std::string_view kType = "status";
  using Reply = Status;
  std::uint64_t jobs = 0;  // also list the top N jobs (at most kMaxTopJobs)
  bool operator==(const StatusQuery&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.optional("jobs", m.jobs);
  }
};

// The jobs of given keys, for a client that follows its own: at most kMaxJobsPerRequest keys, so
// that the reply fits a frame.
inline constexpr std::size_t kMaxJobsPerRequest = 500;
struct JobsReply {
  static constexpr std::string_view kType = "jobs";
  std::vector<JobEntry> jobs;  // per key asked, in order, `key` as sent
  std::optional<std::uint64_t> jobs_omitted;
  bool operator==(const JobsReply&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("jobs", m.jobs);
    v.optional("jobs_omitted", m.jobs_omitted);
  }
};
struct JobsQuery {
  static constexpr std::string_view kType = "jobs";
  using Reply = JobsReply;
  std::vector<std::string> keys;
  bool operator==(const JobsQuery&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("keys", m.keys, kKeyLines);
  }
  static void check(const JobsQuery& m);
};

struct CacheChangedOk {
  static constexpr std::string_view kType = "ok";
  std::uint64_t generation = 0, previous_generation = 0, subscribers = 0;
  bool operator==(const CacheChangedOk&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("generation", m.generation);
    v.required("previous_generation", m.previous_generation);
    v.required("subscribers", m.subscribers);
  }
};
// Another process (kdctl import or evict) wrote or removed the records of `keys` (full key lines;
// may be empty: some records changed), `count` records in all.
struct CacheChanged {
  static constexpr std::string_view kType = "cache_changed";
  using Reply = CacheChangedOk;
  std::vector<std::string> keys;
  std::optional<std::uint64_t> count;
  bool operator==(const CacheChanged&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.defaulted("keys", m.keys, kKeyLines);
    v.optional("count", m.count);
  }
};

struct StatsQuery : NoFields {
  static constexpr std::string_view kType = "stats";
  using Reply = Stats;
  bool operator==(const StatsQuery&) const = default;
};

struct StatsZeroed {
  static constexpr std::string_view kType = "ok";
  bool zeroed = true;
  bool operator==(const StatsZeroed&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("zeroed", m.zeroed);
  }
};
struct ZeroStats : NoFields {
  static constexpr std::string_view kType = "zero_stats";
  using Reply = StatsZeroed;
  bool operator==(const ZeroStats&) const = default;
};

struct CancelOk {
  static constexpr std::string_view kType = "ok";
  bool cancelled = false;              // false: the job was not queued or running
  std::optional<std::string> message;  // the parser's message for a key that does not parse
  bool operator==(const CancelOk&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("cancelled", m.cancelled);
    v.optional("message", m.message);
  }
};
struct Cancel {
  static constexpr std::string_view kType = "cancel";
  using Reply = CancelOk;
  std::string key;
  bool operator==(const Cancel&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("key", m.key);
  }
};

// Finished jobs removed (or, with dry_run, counted) per state.
struct PurgedJobs {
  std::uint64_t done = 0, failed = 0, cancelled = 0;
  bool operator==(const PurgedJobs&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("done", m.done);
    v.required("failed", m.failed);
    v.required("cancelled", m.cancelled);
  }
};
struct PurgeOk {
  static constexpr std::string_view kType = "ok";
  PurgedJobs removed;
  std::uint64_t total = 0;
  bool dry_run = false;
  bool operator==(const PurgeOk&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("removed", m.removed);
    v.required("total", m.total);
    v.required("dry_run", m.dry_run);
  }
};
struct Purge {
  static constexpr std::string_view kType = "purge";
  using Reply = PurgeOk;
  std::vector<std::string> states;  // done, failed, cancelled; empty: all three
  std::uint64_t older_than_s = 0;   // 0: every finished job
  bool dry_run = false;
  bool operator==(const Purge&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.optional("states", m.states, "an array of job states");
    v.optional("older_than_s", m.older_than_s);
    v.optional("dry_run", m.dry_run);
  }
};

struct ShutdownOk : NoFields {
  static constexpr std::string_view kType = "ok";
  bool operator==(const ShutdownOk&) const = default;
};
struct Shutdown : NoFields {
  static constexpr std::string_view kType = "shutdown";
  using Reply = ShutdownOk;
  bool operator==(const Shutdown&) const = default;
};

}  // namespace kd::protocol
