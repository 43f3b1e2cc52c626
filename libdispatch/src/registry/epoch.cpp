#include "registry/epoch.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <type_traits>

namespace kd {
namespace {

// Frees the thread's slot when the thread exits. Touched only when the thread claims its slot (its
// first access registers the destructor); the domain is immortal so the destructor may run at any
// time, even after kd_shutdown.
struct ThreadBinding {
  ThreadSlot* slot = nullptr;
  bool exhausted = false;  // all slots were taken when this thread asked: do not rescan per call
  ~ThreadBinding() {
    if (slot == nullptr) return;
    t_epoch_slot = nullptr;
    EpochDomain::instance().release(slot);
  }
};

thread_local ThreadBinding t_binding;

long membarrier(int cmd) noexcept { return syscall(SYS_membarrier, cmd, 0U, 0); }

bool built_with_thread_sanitizer() noexcept {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

static_assert(std::is_trivially_destructible_v<EpochDomain>,
              "the domain must never be destroyed: thread-exit hooks use it during process exit");

thread_local ThreadSlot* t_epoch_slot __attribute__((tls_model("initial-exec"))) = nullptr;
constinit EpochDomain EpochDomain::domain_;
constinit std::atomic<bool> EpochDomain::asymmetric_{false};

void EpochDomain::enable_asymmetric_fence() noexcept {
  static const bool ok = [] {
    // ThreadSanitizer cannot see the kernel's fence and would report the reader's relaxed store.
    if (built_with_thread_sanitizer()) return false;
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  if (ok) asymmetric_.store(true, std::memory_order_seq_cst);
}

ThreadSlot* EpochDomain::claim_for_this_thread() noexcept {
  ThreadBinding& b = t_binding;
  if (b.slot != nullptr) return t_epoch_slot = b.slot;
  if (b.exhausted) return nullptr;
  b.slot = claim();
  b.exhausted = b.slot == nullptr;
  t_epoch_slot = b.slot;
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
  // Orders every reader's relaxed epoch store before the scan below, or its loads after the
  // writer's unlink (epoch.hpp). It cannot fail once registration succeeded.
  if (asymmetric()) membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
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
