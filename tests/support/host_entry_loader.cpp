#include "support/host_entry_loader.hpp"

namespace kd::test {

std::variant<LoadedEntry, FallbackReason> HostEntryLoader::load(const CallKey& key, const Record& record) {
  LoadedEntry out;
  out.entry = std::make_unique<Entry>();
  out.entry->key = key;
  if (!record.plan.launches.empty()) {
    out.entry->launch_count = 1;
    out.entry->launches[0].grid = record.plan.launches.front().grid;
  }
  return out;
}

Dispatcher::Lookup lookup_as_caller(Dispatcher& d, const CallKey& key) {
  ReadGuard guard(*EpochDomain::instance().this_thread());
  return d.lookup(key);
}

}  // namespace kd::test
