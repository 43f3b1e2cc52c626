// Open-addressing hash table of std::atomic<Entry*>, linear probing, power-of-two capacity kept at
// most half full. One writer (the background thread) inserts and replaces; any number of readers
// find without locks. Keys are never removed (a key that stops being cached gets a negative
// entry), so probing never meets a tombstone. The table does not free entries: Registry retires
// them through the epoch domain.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "registry/entry.hpp"

namespace kd {

class EntryTable {
public:
  explicit EntryTable(std::size_t capacity);  // rounded up to a power of two, at least 16
  EntryTable(const EntryTable&) = delete;
  EntryTable& operator=(const EntryTable&) = delete;

  std::size_t capacity() const noexcept { return mask_ + 1; }
  std::size_t size() const noexcept { return size_; }  // writer only
  // True when inserting one more key would pass the load limit.
  bool full() const noexcept { return (size_ + 1) * 2 > capacity(); }

  // Reader: the entry for `key`, or nullptr. Requires a ReadGuard.
  const Entry* find(const CallKey& key, std::uint64_t hash) const noexcept {
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Entry* e = slots_[i].load(std::memory_order_seq_cst);
      if (e == nullptr) return nullptr;
      if (e->hash == hash && e->key == key) return e;
    }
  }

  // Writer: stores `entry` under its key. Returns the entry it replaced (nullptr for a new key).
  // Requires !full() when the key is new.
  Entry* put(Entry* entry) noexcept;

  // Writer: visits every entry.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i <= mask_; ++i)
      if (Entry* e = slots_[i].load(std::memory_order_relaxed)) f(e);
  }

private:
  std::size_t mask_;
  std::size_t size_ = 0;
  std::unique_ptr<std::atomic<Entry*>[]> slots_;
};

}  // namespace kd
