// Epoch-based reclamation for the registry's readers, plus the per-thread call counters.
//
// Readers (calling threads) never lock, allocate or make a system call: a thread claims one of a
// fixed array of cache-line-sized slots on its first call (a CAS scan, no allocation), and a read
// section is two stores to that slot. The single writer (the background thread) retires an
// unlinked object at the epoch it bumps; the object is freed once every thread inside a read
// section entered at a later epoch.
//
// Memory ordering: a reader publishes its epoch and then loads table pointers; the writer unlinks
// (seq_cst exchange), bumps the epoch and scans the slots. The reader's store must be ordered before
// its loads. Where the kernel offers membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), that ordering is
// made asymmetric: the reader's store is a plain (relaxed) store behind a compiler barrier, and the
// writer runs membarrier before each scan, which executes a full fence on every running thread of
// the process. Either a reader's store precedes that fence (the scan sees it: the object is kept)
// or its loads follow it (they see the unlink: the object is unreachable). Without membarrier (old
// kernels, seccomp, ThreadSanitizer builds) the reader stores seq_cst and the scan loads seq_cst,
// which gives the same guarantee through the single total order. The x86 cost difference is the
// locked store on every hit, which is what issue 3's 50 ns budget cannot afford.
//
// The domain is process-wide and never destroyed, so a thread that exits after kd_shutdown still
// finds it. Its per-thread counters are therefore counted since the library was loaded.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "registry/fallback_reason.hpp"

namespace kd {

// Per-thread counters, written only by their thread (relaxed load + store, no locked RMW).
enum class ThreadCounter : std::uint8_t { hits = 0, misses = 1, first_fallback = 2 };
inline constexpr std::size_t kThreadCounterCount = 2 + kFallbackReasonCount;

constexpr std::size_t fallback_counter(FallbackReason r) noexcept {
  return static_cast<std::size_t>(ThreadCounter::first_fallback) + static_cast<std::size_t>(r);
}

struct alignas(64) ThreadSlot {
  std::atomic<std::uint64_t> epoch{0};  // 0: not in a read section
  std::atomic<bool> claimed{false};
  std::uint32_t nesting = 0;  // touched only by the owning thread
  std::array<std::atomic<std::uint64_t>, kThreadCounterCount> counters{};

  void bump(std::size_t counter) noexcept {
    auto& c = counters[counter];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

// The calling thread's slot (nullptr until claimed). Initial-exec TLS with no constructor or
// destructor, so the hot path reads it with one thread-pointer-relative load and no TLS call.
extern thread_local ThreadSlot* t_epoch_slot __attribute__((tls_model("initial-exec")));

class EpochDomain {
public:
  static constexpr std::size_t kMaxThreads = 1024;

  // The process-wide domain: constant-initialized and trivially destructible, so it exists before
  // any constructor runs and is never torn down (thread-exit hooks and late calls stay safe).
  static EpochDomain& instance() noexcept { return domain_; }

  // The calling thread's slot, claimed on first use; nullptr when all slots are taken.
  ThreadSlot* this_thread() noexcept {
    ThreadSlot* s = t_epoch_slot;
    return s != nullptr ? s : claim_for_this_thread();
  }

  // Turns on the asymmetric fence when the kernel supports it (one registration system call).
  // Idempotent; called from kd_init and by the writer before its first scan. Readers that run
  // before it simply use the seq_cst store.
  static void enable_asymmetric_fence() noexcept;
  static bool asymmetric() noexcept { return asymmetric_.load(std::memory_order_relaxed); }

  std::uint64_t current() const noexcept { return global_.load(std::memory_order_seq_cst); }
  // Writer side: bumps the epoch; returns the epoch objects unlinked before the call retire at.
  std::uint64_t advance() noexcept { return global_.fetch_add(1, std::memory_order_seq_cst); }
  // The oldest epoch any thread's read section entered at; UINT64_MAX when none is in one. An
  // object retired at epoch r may be freed when r < oldest_active().
  std::uint64_t oldest_active() const noexcept;

  // Sum of every thread's counters, those of exited threads included.
  std::array<std::uint64_t, kThreadCounterCount> counter_totals() const;

  // Called by the thread-exit hook: folds the slot's counters into the exited totals and frees it.
  void release(ThreadSlot* slot) noexcept;

private:
  constexpr EpochDomain() = default;
  ThreadSlot* claim() noexcept;
  ThreadSlot* claim_for_this_thread() noexcept;

  static EpochDomain domain_;
  static std::atomic<bool> asymmetric_;

  std::atomic<std::uint64_t> global_{1};
  std::array<ThreadSlot, kMaxThreads> slots_{};
  std::atomic<std::size_t> high_water_{0};  // slots_[0, high_water_) have ever been claimed
  mutable std::mutex exited_mutex_;         // guards exited_ and slot release vs. totals
  std::array<std::uint64_t, kThreadCounterCount> exited_{};
};

// A read section. Nests: only the outermost guard publishes and clears the epoch. Entries found
// inside stay valid (not freed) until the outermost guard ends.
class ReadGuard {
public:
  explicit ReadGuard(ThreadSlot& slot) noexcept : slot_(&slot) { enter(slot); }
  ~ReadGuard() { exit(*slot_); }
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

  static void enter(ThreadSlot& s) noexcept {
    if (s.nesting++ != 0) return;
    const std::uint64_t e = EpochDomain::instance().current();
    if (EpochDomain::asymmetric()) {
      s.epoch.store(e, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer's membarrier is the fence
    } else {
      s.epoch.store(e, std::memory_order_seq_cst);
    }
  }
  static void exit(ThreadSlot& s) noexcept {
    if (--s.nesting == 0) s.epoch.store(0, std::memory_order_release);
  }

private:
  ThreadSlot* slot_;
};

}  // namespace kd
