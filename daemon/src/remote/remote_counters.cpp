#include "remote/remote_counters.hpp"

namespace kd::daemon {
namespace {

// One row per counter; the Prometheus name is kdispatch_remote_<name>_total.
constexpr CounterRow<RemoteCounter> kCounters[] = {
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

}  // namespace

protocol::RemoteCounts RemoteCounters::counts() const {
  protocol::RemoteCounts c;
  for (const auto& row : kCounters) c.counts[std::string(row.name)] = get(row.counter);
  c.rejected = rejected_.values();
  c.mismatched = mismatched_.values();
  return c;
}

nlohmann::json RemoteCounters::to_json() const { return counts(); }

std::string RemoteCounters::prometheus_text(bool connected) const {
  std::string out;
  append_counters(out, "remote_", std::span<const CounterRow<RemoteCounter>>(kCounters), *this);
  append_labelled_counter(out, "kdispatch_remote_rejects_total",
                          "Values from the remote tier rejected as damaged or forged, by reason.", "reason",
                          rejected_.values());
  append_labelled_counter(out, "kdispatch_remote_mismatches_total",
                          "Sound records from the remote tier skipped: another GPU, driver or library version, by reason.",
                          "reason", mismatched_.values());
  append_metric(out, "kdispatch_remote_connected", "gauge", "1 while the link to the remote tier is up.",
                connected ? 1 : 0);
  return out;
}

}  // namespace kd::daemon
