// The registry: CallKey (which includes the CUDA context) -> Entry, read by calling threads without
// locks, allocation or system calls, written by one background thread.
//
// Hot-swap is a single atomic pointer exchange in the table; the replaced Entry (host memory) is
// retired and freed through the epoch domain once no reader can hold it. The table grows by the
// writer building a larger copy and publishing the new table pointer; the old table is retired the
// same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "registry/entry.hpp"
#include "registry/entry_table.hpp"
#include "registry/epoch.hpp"

namespace kd {

class Registry {
public:
  explicit Registry(std::size_t initial_capacity = 4096);
  // Frees every entry and table. Requires that no thread is inside a lookup.
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Reader: the current entry for `key` (any state), or nullptr. Must be called inside a
  // ReadGuard; the entry stays valid until the outermost guard ends.
  const Entry* lookup(const CallKey& key, std::uint64_t hash) const noexcept {
    return table_.load(std::memory_order_seq_cst)->find(key, hash);
  }

  // --- writer side: one thread only ---

  // Publishes `entry` (its key and hash set), replacing any entry with the same key; the replaced
  // one is retired. Returns the replaced entry for inspection (valid until the next reclaim()).
  const Entry* publish(std::unique_ptr<Entry> entry);
  // The entry for `key` as the writer sees it (no guard needed: only the writer frees).
  const Entry* find(const CallKey& key) const noexcept;
  // Frees retired entries and tables no reader can still hold. Returns how many were freed.
  std::size_t reclaim();

  template <class F>
  void for_each(F&& f) const {
    table_.load(std::memory_order_relaxed)->for_each(std::forward<F>(f));
  }

  std::size_t size() const noexcept { return table_.load(std::memory_order_relaxed)->size(); }
  std::size_t capacity() const noexcept { return table_.load(std::memory_order_relaxed)->capacity(); }
  std::uint64_t retired_total() const noexcept { return retired_total_; }
  std::uint64_t freed_total() const noexcept { return freed_total_; }
  std::size_t retired_pending() const noexcept { return retired_entries_.size() + retired_tables_.size(); }

private:
  void grow();

  std::atomic<EntryTable*> table_;
  std::vector<std::pair<std::uint64_t, std::unique_ptr<Entry>>> retired_entries_;
  std::vector<std::pair<std::uint64_t, std::unique_ptr<EntryTable>>> retired_tables_;
  std::uint64_t retired_total_ = 0;
  std::uint64_t freed_total_ = 0;
};

}  // namespace kd
