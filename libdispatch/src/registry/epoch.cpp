#include "registry/epoch.hpp"

#include <new>

namespace kd {
namespace {

// Frees the thread's slot when the thread exits. Constructed on the thread's first call; the
// domain is immortal so the destructor may run at any time, even after kd_shutdown.
struct ThreadBinding {
  ThreadSlot* slot = nullptr;
  bool exhausted = false;  // all slots were taken when this thread asked: do not rescan per call
  ~ThreadBinding() {
    if (slot != nullptr) EpochDomain::instance().release(slot);
  }
};

thread_local ThreadBinding t_binding;

}  // namespace

EpochDomain& EpochDomain::instance() noexcept {
  // Immortal: never destroyed, so thread-exit hooks and late calls during process exit are safe.
  alignas(EpochDomain) static unsigned char storage[sizeof(EpochDomain)];
  static EpochDomain* const domain = new (storage) EpochDomain();
  return *domain;
}

ThreadSlot* EpochDomain::this_thread() noexcept {
  ThreadBinding& b = t_binding;
  if (b.slot != nullptr) return b.slot;
  if (b.exhausted) return nullptr;
  b.slot = claim();
  b.exhausted = b.slot == nullptr;
  return b.slot;
}

ThreadSlot* EpochDomain::claim() noexcept {
  for (std::size_t i = 0; i < kMaxThreads; ++i) {
    bool expected = false;
    if (slots_[i].claimed.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      std::size_t hw = high_water_.load(std::memory_order_relaxed);
      while (hw < i + 1 &&
             !high_water_.compare_exchange_weak(hw, i + 1, std::memory_order_seq_cst)) {
      }
      return &slots_[i];
    }
  }
  return nullptr;
}

std::uint64_t EpochDomain::oldest_active() const noexcept {
  std::uint64_t oldest = UINT64_MAX;
  const std::size_t n = high_water_.load(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t e = slots_[i].epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < oldest) oldest = e;
  }
  return oldest;
}

std::array<std::uint64_t, kThreadCounterCount> EpochDomain::counter_totals() const {
  std::lock_guard lock(exited_mutex_);
  std::array<std::uint64_t, kThreadCounterCount> sum = exited_;
  const std::size_t n = high_water_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < kThreadCounterCount; ++c)
      sum[c] += slots_[i].counters[c].load(std::memory_order_relaxed);
  return sum;
}

void EpochDomain::release(ThreadSlot* slot) noexcept {
  std::lock_guard lock(exited_mutex_);
  for (std::size_t c = 0; c < kThreadCounterCount; ++c)
    exited_[c] += slot->counters[c].exchange(0, std::memory_order_relaxed);
  slot->nesting = 0;
  slot->epoch.store(0, std::memory_order_release);
  slot->claimed.store(false, std::memory_order_release);
}

}  // namespace kd
