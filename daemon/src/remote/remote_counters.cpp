#include "remote/remote_counters.hpp"

#include <fmt/format.h>

namespace kd::daemon {
namespace {

struct CounterInfo {
  RemoteCounter counter;
  std::string_view name;
  std::string_view help;
};

constexpr CounterInfo kCounters[] = {
    {RemoteCounter::lookups, "lookups", "Missed keys looked up in the fleet's remote tier."},
    {RemoteCounter::hits, "hits", "Lookups in the remote tier that found a value."},
    {RemoteCounter::imports, "imports", "Records from the remote tier committed to this cache and pushed to clients."},
    {RemoteCounter::pushes, "pushes", "Records of this cache written to the remote tier."},
    {RemoteCounter::leases_taken, "leases_taken", "Searches started under a fleet lease."},
    {RemoteCounter::lease_waits, "lease_waits", "Jobs put back because another daemon held the key's lease."},
    {RemoteCounter::lease_takeovers, "lease_takeovers",
     "Leases taken on a key whose earlier holder stopped renewing (it died mid-search)."},
    {RemoteCounter::leases_lost, "leases_lost", "Leases that expired while this daemon searched (it stalled)."},
    {RemoteCounter::finished_elsewhere, "finished_elsewhere",
     "Jobs closed because another daemon searched the key and found nothing faster."},
    {RemoteCounter::unverified, "unverified",
     "Records from the tier held back: they need this machine's gate, which cannot run here."},
    {RemoteCounter::outages, "outages", "Times the link to the remote tier was lost."},
    {RemoteCounter::searched_unleased, "searched_unleased",
     "Searches started without a lease because the remote tier was unreachable."},
};
static_assert(std::size(kCounters) == static_cast<std::size_t>(RemoteCounter::count_));

std::string escape_label(std::string_view v) {
  std::string out;
  for (const char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

}  // namespace

void RemoteCounters::add_rejected(std::string_view reason) {
  const std::lock_guard lock(mu_);
  ++rejected_[std::string(reason)];
}

void RemoteCounters::add_mismatched(std::string_view reason) {
  const std::lock_guard lock(mu_);
  ++mismatched_[std::string(reason)];
}

protocol::RemoteCounts RemoteCounters::counts() const {
  protocol::RemoteCounts c;
  for (const auto& info : kCounters) c.counts[std::string(info.name)] = get(info.counter);
  const std::lock_guard lock(mu_);
  c.rejected = {rejected_.begin(), rejected_.end()};
  c.mismatched = {mismatched_.begin(), mismatched_.end()};
  return c;
}

nlohmann::json RemoteCounters::to_json() const { return counts(); }

std::string RemoteCounters::prometheus_text(bool connected) const {
  std::string out;
  for (const auto& info : kCounters) {
    const std::string name = fmt::format("kdispatch_remote_{}_total", info.name);
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, info.help, name, name, get(info.counter));
  }
  const std::lock_guard lock(mu_);
  out += "# HELP kdispatch_remote_rejects_total Values from the remote tier rejected as damaged or forged, by reason.\n"
         "# TYPE kdispatch_remote_rejects_total counter\n";
  for (const auto& [reason, n] : rejected_)
    out += fmt::format("kdispatch_remote_rejects_total{{reason=\"{}\"}} {}\n", escape_label(reason), n);
  out += "# HELP kdispatch_remote_mismatches_total Sound records from the remote tier skipped: another GPU, "
         "driver or library version, by reason.\n# TYPE kdispatch_remote_mismatches_total counter\n";
  for (const auto& [reason, n] : mismatched_)
    out += fmt::format("kdispatch_remote_mismatches_total{{reason=\"{}\"}} {}\n", escape_label(reason), n);
  out += fmt::format("# HELP kdispatch_remote_connected 1 while the link to the remote tier is up.\n"
                     "# TYPE kdispatch_remote_connected gauge\nkdispatch_remote_connected {}\n",
                     connected ? 1 : 0);
  return out;
}

}  // namespace kd::daemon
