// Which records this process used, reported to the daemon for its least-recently-used eviction
// (`usage` messages; daemon/PROTOCOL.md, "Usage").
//
// The hit path only marks an entry (Entry::used: a relaxed load, and a store only when clear).
// This reporter, on the background thread, collects the marked loaded entries (and those a vendor
// verdict answers, marked by the fallback path), clears their marks
// and sends their key lines at most every kReportInterval, to a daemon whose hello_ok announced
// `usage`; while none does, marks stay set and are reported once one does. Clearing costs each
// used entry one write of its line per interval, and the next hit one store.
//
// Background thread only, except finish(), which runs after that thread has stopped.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/daemon_connection.hpp"
#include "registry/call_key.hpp"
#include "registry/registry.hpp"

namespace kd {

class UsageReporter {
public:
  using Clock = std::chrono::steady_clock;
  using KeysByLine = std::unordered_map<std::string, std::vector<CallKey>>;
  // A call's line -> the line of the range record serving it (issue 29); calls absent from it are
  // served by their own record.
  using ServedBy = std::unordered_map<std::string, std::string>;
  static constexpr std::chrono::milliseconds kReportInterval{5000};
  // A message stays well under the protocol's 1 MiB frame.
  static constexpr std::size_t kMaxMessageBytes = 512 * 1024;

  // Reports the marked entries when the interval has passed and `daemon` accepts usage.
  void tick(DaemonConnection& daemon, const Registry& registry, const KeysByLine& keys, const ServedBy& served_by,
            Clock::time_point now);
  // The last report, queued in front of the final counter report (sent with it, one non-blocking
  // attempt). Never throws, never blocks.
  void finish(DaemonConnection& daemon, const Registry& registry, const KeysByLine& keys,
              const ServedBy& served_by) noexcept;

  // The record lines of marked loaded (or vendor verdict) entries, clearing the marks: one line per record, whichever
  // contexts and calls hit it (a range record's line once for all the calls it served). Exposed
  // for tests.
  static std::vector<std::string> collect(const Registry& registry, const KeysByLine& keys,
                                          const ServedBy& served_by = {});
  // `lines` split into messages within kMaxMessageBytes and protocol::kMaxUsageKeys.
  static std::vector<protocol::Usage> messages(std::vector<std::string> lines);

private:
  Clock::time_point next_report_{};
};

}  // namespace kd
