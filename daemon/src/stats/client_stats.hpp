// The call counters of client applications (libkdispatch processes), as they report them in
// client_stats messages: per live process and totals, for `kdctl stats`, the stats and status
// replies and /metrics.
//
// Reports are cumulative per instance (one dispatcher of one process). The book remembers each
// instance's last report and adds only the difference to the totals, so a report re-sent after a
// reconnect counts nothing, a new process that the kernel gave an old pid is a new instance and
// counts from zero, and the counts of exited processes stay in the totals. A report whose counters
// went down is rejected (record() says so) and changes nothing.
//
// The totals and the instances' last reports are persisted together (one JSON value under
// kClientStatsMetaKey in the cache's `meta` database, through the job queue's group commit), so a
// daemon restart neither loses the totals nor counts again what a reconnecting client re-sends.
// Counts reported after the last save are lost only for processes that exit before the daemon
// comes back; a process still running re-sends them.
//
// Memory is bounded: live instances are at most one per connection, instances whose connection
// closed without a final report are kept kGoneRetention (at most kMaxGone, oldest dropped), and
// the totals name at most kMaxTotalReasons fallback reasons (more are counted under "other").
//
// Thread-safe: the io thread records, the writer thread's completions mark saves, HTTP reads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "protocol/messages.hpp"
#include "protocol/status.hpp"

namespace kd::daemon {

class JobQueue;

inline constexpr const char* kClientStatsMetaKey = "client_stats";

// One set of call counters; fallbacks by reason name.
struct CallCounters {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::map<std::string, std::uint64_t, std::less<>> fallbacks;
  std::uint64_t loads = 0;
  std::uint64_t swaps = 0;

  std::uint64_t fallbacks_total() const noexcept;
  // As the status and stats replies show them: with fallbacks_total and calls = hits +
  // fallbacks_total (every call ends as one of the two).
  protocol::ClientCounters wire() const;
  bool operator==(const CallCounters&) const = default;
};

CallCounters counters_of(const protocol::ClientStats& report);

class ClientStatsBook {
public:
  static constexpr std::size_t kMaxGone = 1024;
  static constexpr std::chrono::hours kGoneRetention{24};
  static constexpr std::size_t kMaxTotalReasons = 64;
  // report() lists at most this many live processes (those with the most calls), in at most
  // this many bytes of JSON, so that the stats reply stays far below the protocol's frame limit
  // however many clients are live (one process's entry is at most ~6.5 KB: a 256-byte program
  // name and 64 fallback reasons of 64 bytes). The reply's `live_omitted` counts the others.
  static constexpr std::size_t kMaxLiveListed = 200;
  static constexpr std::size_t kMaxLiveListedBytes = 256 * 1024;

  explicit ClientStatsBook(std::int64_t now_unix_ms);

  enum class Outcome : std::uint8_t {
    counted,           // the difference to the instance's last report was added to the totals
    counters_went_down,  // rejected: some counter is lower than in the instance's last report
  };
  // One report, received on connection `connection` (a number the server never reuses).
  Outcome record(const protocol::ClientStats& report, std::uint64_t connection, std::int64_t now_unix_ms);
  // Connection `connection`, which reported for `instance`, closed.
  void disconnected(const std::string& instance, std::uint64_t connection, std::int64_t now_unix_ms);
  // Starts the totals over (kdctl stats --zero); instances keep their last reports, so later
  // reports count only what happens from now on.
  void zero(std::int64_t now_unix_ms);

  CallCounters totals() const;
  std::size_t live() const;
  // The stats reply's `clients`: totals and the live processes (sorted by pid; the processes_live
  // with the most calls, within kMaxLiveListed and kMaxLiveListedBytes; live_omitted =
  // processes_live - live.size()).
  protocol::ClientsReport report() const;

  // Persistence. serialize() returns the text and the change number it holds; saved() marks that
  // number stored; dirty() says whether a change is not yet stored.
  std::pair<std::string, std::uint64_t> serialize() const;
  void saved(std::uint64_t change) noexcept;
  bool dirty() const;
  // Replaces the state by a serialized one; every instance counts as disconnected at
  // `now_unix_ms`. On unreadable text: the state is unchanged and the problem is returned.
  std::optional<std::string> restore(std::string_view text, std::int64_t now_unix_ms);

private:
  struct Instance {
    std::int64_t pid = 0;
    std::string program;
    CallCounters last;                // as last reported (cumulative)
    std::uint64_t connection = 0;     // 0: disconnected
    std::int64_t first_report_unix_ms = 0;
    std::int64_t last_report_unix_ms = 0;
    std::int64_t gone_unix_ms = 0;    // when the connection closed (connection == 0)
  };
  void add_to_totals(const CallCounters& delta);
  void prune(std::int64_t now_unix_ms);

  mutable std::mutex mu_;
  std::int64_t since_unix_ms_;
  std::uint64_t processes_seen_ = 0;
  CallCounters totals_;
  std::map<std::string, Instance, std::less<>> instances_;
  std::uint64_t change_ = 0;
  std::uint64_t saved_change_ = 0;
};

// Loads the persisted book from the queue's cache (a warning names a damaged value, which is then
// replaced at the next save).
void load_client_stats(ClientStatsBook& book, JobQueue& queue);
// Stores the book through the queue's group commit when it changed (always when `force`); `done`
// (may be empty) runs after the commit, on the writer thread.
void save_client_stats(ClientStatsBook& book, JobQueue& queue, bool force,
                       std::function<void(bool committed, const std::string& error)> done);

}  // namespace kd::daemon
