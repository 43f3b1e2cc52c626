#include "registry/registry.hpp"

#include <algorithm>

namespace kd {

Registry::Registry(std::size_t initial_capacity) : table_(new EntryTable(initial_capacity)) {}

Registry::~Registry() {
  EntryTable* t = table_.load(std::memory_order_relaxed);
  t->for_each([](Entry* e) { delete e; });
  delete t;
}

const Entry* Registry::publish(std::unique_ptr<Entry> entry) {
  entry->hash = hash_call_key(entry->key);
  EntryTable* t = table_.load(std::memory_order_relaxed);
  if (t->find(entry->key, entry->hash) == nullptr && t->full()) {
    grow();
    t = table_.load(std::memory_order_relaxed);
  }
  Entry* old = t->put(entry.release());
  if (old != nullptr) {
    // Unlinked above (seq_cst exchange); readers that entered before this bump may still hold it.
    const std::uint64_t retired_at = EpochDomain::instance().advance();
    retired_entries_.emplace_back(retired_at, std::unique_ptr<Entry>(old));
    ++retired_total_;
  }
  return old;
}

const Entry* Registry::find(const CallKey& key) const noexcept {
  return table_.load(std::memory_order_relaxed)->find(key, hash_call_key(key));
}

void Registry::grow() {
  EntryTable* old = table_.load(std::memory_order_relaxed);
  auto bigger = std::make_unique<EntryTable>(old->capacity() * 2);
  old->for_each([&](Entry* e) { bigger->put(e); });
  table_.store(bigger.release(), std::memory_order_seq_cst);
  const std::uint64_t retired_at = EpochDomain::instance().advance();
  retired_tables_.emplace_back(retired_at, std::unique_ptr<EntryTable>(old));
}

std::size_t Registry::reclaim() {
  const std::uint64_t oldest = EpochDomain::instance().oldest_active();
  std::size_t freed = 0;
  auto sweep = [&](auto& list) {
    auto keep = std::remove_if(list.begin(), list.end(), [&](auto& item) {
      if (item.first >= oldest) return false;
      item.second.reset();
      ++freed;
      return true;
    });
    list.erase(keep, list.end());
  };
  sweep(retired_entries_);
  sweep(retired_tables_);
  freed_total_ += freed;
  return freed;
}

}  // namespace kd
