#include "runtime/usage_reporter.hpp"

namespace kd {

std::vector<std::string> UsageReporter::collect(const Registry& registry, const KeysByLine& keys) {
  std::vector<std::string> lines;
  for (const auto& [line, call_keys] : keys) {
    bool used = false;
    for (const CallKey& key : call_keys) {
      const Entry* e = registry.find(key);
      if (e == nullptr || e->state != EntryState::loaded || e->used.load(std::memory_order_relaxed) == 0)
        continue;
      e->used.store(0, std::memory_order_relaxed);
      used = true;
    }
    if (used) lines.push_back(line);
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
                         Clock::time_point now) {
  if (!daemon.accepts_usage() || now < next_report_) return;
  next_report_ = now + kReportInterval;
  for (const protocol::Usage& m : messages(collect(registry, keys))) daemon.send_usage(m);
}

void UsageReporter::finish(DaemonConnection& daemon, const Registry& registry, const KeysByLine& keys) noexcept {
  try {
    if (!daemon.accepts_usage()) return;
    for (const protocol::Usage& m : messages(collect(registry, keys))) daemon.queue_final(m);
  } catch (...) {
    // out of memory at exit: the daemon keeps the last report
  }
}

}  // namespace kd
