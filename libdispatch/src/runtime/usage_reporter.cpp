#include "runtime/usage_reporter.hpp"

#include <unordered_set>

namespace kd {

std::vector<std::string> UsageReporter::collect(const Registry& registry, const KeysByLine& keys,
                                                const ServedBy& served_by) {
  std::vector<std::string> lines;
  std::unordered_set<std::string_view> ranges;  // range record lines already listed
  for (const auto& [line, call_keys] : keys) {
    bool used = false;
    for (const CallKey& key : call_keys) {
      const Entry* e = registry.find(key);
      const bool served = e != nullptr && (e->state == EntryState::loaded ||
                                           (e->state == EntryState::negative &&
                                            e->miss_reason == FallbackReason::vendor_chosen));
      if (!served || e->used.load(std::memory_order_relaxed) == 0) continue;
      e->used.store(0, std::memory_order_relaxed);
      used = true;
    }
    if (!used) continue;
    if (const auto it = served_by.find(line); it != served_by.end()) {
      if (ranges.insert(it->second).second) lines.push_back(it->second);
    } else {
      lines.push_back(line);
    }
  }
  return lines;
}

std::vector<protocol::Usage> UsageReporter::messages(std::vector<std::string> lines) {
  std::vector<protocol::Usage> out;
  std::size_t bytes = 0;
  for (auto& line : lines) {
    if (out.empty() || out.back().keys.size() >= protocol::kMaxUsageKeys ||
        bytes + line.size() + 4 > kMaxMessageBytes) {
      out.emplace_back();
      bytes = 0;
    }
    bytes += line.size() + 4;  // quotes, comma, escapes of the quoted GPU name
    out.back().keys.push_back(std::move(line));
  }
  return out;
}

void UsageReporter::tick(DaemonConnection& daemon, const Registry& registry, const KeysByLine& keys,
                         const ServedBy& served_by, Clock::time_point now) {
  if (!daemon.accepts_usage() || now < next_report_) return;
  next_report_ = now + kReportInterval;
  for (const protocol::Usage& m : messages(collect(registry, keys, served_by))) daemon.send_usage(m);
}

void UsageReporter::finish(DaemonConnection& daemon, const Registry& registry, const KeysByLine& keys,
                           const ServedBy& served_by) noexcept {
  try {
    if (!daemon.accepts_usage()) return;
    for (const protocol::Usage& m : messages(collect(registry, keys, served_by))) daemon.queue_final(m);
  } catch (...) {
    // out of memory at exit: the daemon keeps the last report
  }
}

}  // namespace kd
