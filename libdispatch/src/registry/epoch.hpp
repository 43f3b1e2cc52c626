// Epoch-based reclamation for the registry's readers, plus the per-thread call counters.
//
// Readers (calling threads) never lock, allocate or make a system call: a thread claims one of a
// fixed array of cache-line-sized slots on its first call (a CAS scan, no allocation), and a read
// section is two stores to that slot. The single writer (the background thread) retires an
// unlinked object at the epoch it bumps; the object is freed once every thread inside a read
// section entered at a later epoch.
//
// Memory ordering: a reader publishes its epoch with a seq_cst store and then loads table pointers
// seq_cst; the writer unlinks (seq_cst exchange), bumps the epoch (seq_cst) and scans the slots
// (seq_cst). In the single total order either the scan sees the reader's epoch (the object is kept)
// or the reader's pointer loads come after the unlink (it cannot reach the object).
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

class EpochDomain {
public:
  static constexpr std::size_t kMaxThreads = 1024;

  // The process-wide domain (immortal).
  static EpochDomain& instance() noexcept;

  // The calling thread's slot, claimed on first use; nullptr when all slots are taken.
  ThreadSlot* this_thread() noexcept;

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
  EpochDomain() = default;
  ThreadSlot* claim() noexcept;

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
    if (s.nesting++ == 0)
      s.epoch.store(EpochDomain::instance().current(), std::memory_order_seq_cst);
  }
  static void exit(ThreadSlot& s) noexcept {
    if (--s.nesting == 0) s.epoch.store(0, std::memory_order_release);
  }

private:
  ThreadSlot* slot_;
};

}  // namespace kd
