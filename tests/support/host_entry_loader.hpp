// The dispatcher without a GPU: its one GPU seam (EntryLoader) served on the host, and a lookup
// made the way a calling thread makes it. For tests and benchmarks of the runtime's host side.
#pragma once

#include <functional>
#include <string>

#include "runtime/dispatcher.hpp"
#include "runtime/entry_loader.hpp"

namespace kd::test {

// A call key's line comes from `line_of`; a record "loads" into an entry that carries the record's
// first launch (its grid tells a test which record was loaded), or none when the plan has none.
class HostEntryLoader final : public EntryLoader {
public:
  explicit HostEntryLoader(std::function<std::string(const CallKey&)> line_of) : line_of_(std::move(line_of)) {}
  std::variant<std::string, FallbackReason> key_line(const CallKey& key) override { return line_of_(key); }
  std::variant<LoadedEntry, FallbackReason> load(const CallKey& key, const Record& record) override;

private:
  std::function<std::string(const CallKey&)> line_of_;
};

// Dispatcher::lookup inside the calling thread's read section, as kd_gemm_lookup makes it.
Dispatcher::Lookup lookup_as_caller(Dispatcher& d, const CallKey& key);

}  // namespace kd::test
