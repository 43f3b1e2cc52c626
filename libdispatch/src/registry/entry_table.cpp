#include "registry/entry_table.hpp"

#include <bit>

namespace kd {

EntryTable::EntryTable(std::size_t capacity)
    : mask_(std::bit_ceil(capacity < 16 ? std::size_t{16} : capacity) - 1),
      slots_(new std::atomic<Entry*>[mask_ + 1]) {
  for (std::size_t i = 0; i <= mask_; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

Entry* EntryTable::put(Entry* entry) noexcept {
  for (std::size_t i = entry->hash & mask_;; i = (i + 1) & mask_) {
    Entry* e = slots_[i].load(std::memory_order_relaxed);
    if (e == nullptr) {
      slots_[i].store(entry, std::memory_order_seq_cst);
      ++size_;
      return nullptr;
    }
    if (e->hash == entry->hash && e->key == entry->key)
      return slots_[i].exchange(entry, std::memory_order_seq_cst);
  }
}

}  // namespace kd
