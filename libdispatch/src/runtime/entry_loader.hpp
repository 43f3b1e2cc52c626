// What the background thread needs from CUDA, behind an interface so that the dispatcher runs
// (and is tested) on machines without a GPU.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "registry/call_key.hpp"
#include "registry/entry.hpp"
#include "registry/fallback_reason.hpp"
#include "store/record.hpp"

namespace kd {

// CUDA objects an entry uses (module, workspace). Owned by the dispatcher and kept until it shuts
// down, because queued kernels and captured CUDA graphs may use them after the entry is replaced.
class EntryResources {
public:
  virtual ~EntryResources() = default;
};

struct LoadedEntry {
  std::unique_ptr<Entry> entry;  // state loaded; key, launches, alignment, workspace filled in
  std::unique_ptr<EntryResources> resources;
};

class EntryLoader {
public:
  virtual ~EntryLoader() = default;
  // Called once on the background thread before anything else.
  virtual void on_thread_start() {}
  // The full key line (device part included) for a call key, or why it cannot have one
  // (foreign_context, no_gpu, unsupported).
  virtual std::variant<std::string, FallbackReason> key_line(const CallKey& key) = 0;
  // Loads `record` for `key` into the key's context. Failures are a reason (load_failed,
  // unsupported), never an exception.
  virtual std::variant<LoadedEntry, FallbackReason> load(const CallKey& key, const Record& record) = 0;
};

}  // namespace kd
