// A bounded lock-free multi-producer single-consumer ring of miss reports (Vyukov's bounded queue:
// one sequence number per cell). Calling threads push without locks, allocation or system calls;
// when the ring is full the report is dropped and counted. The background thread pops.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "registry/call_key.hpp"

namespace kd {

struct MissReport {
  CallKey key;
};

class MissQueue {
public:
  explicit MissQueue(std::size_t capacity = 1024)
      : mask_(std::bit_ceil(capacity < 2 ? std::size_t{2} : capacity) - 1),
        cells_(new Cell[mask_ + 1]) {
    for (std::size_t i = 0; i <= mask_; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  MissQueue(const MissQueue&) = delete;
  MissQueue& operator=(const MissQueue&) = delete;

  std::size_t capacity() const noexcept { return mask_ + 1; }

  enum class Push : std::uint8_t { queued, dropped };

  // Any thread. Never blocks.
  Push push(const MissReport& report) noexcept {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.report = report;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return Push::queued;
        }
      } else if (diff < 0) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return Push::dropped;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // The single consumer only.
  std::optional<MissReport> pop() noexcept {
    Cell& cell = cells_[head_ & mask_];
    const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
    if (static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(head_ + 1) < 0)
      return std::nullopt;
    MissReport r = cell.report;
    cell.sequence.store(head_ + mask_ + 1, std::memory_order_release);
    ++head_;
    return r;
  }

  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
  struct alignas(64) Cell {
    std::atomic<std::size_t> sequence{0};
    MissReport report{};
  };

  std::size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<std::size_t> tail_{0};
  alignas(64) std::size_t head_ = 0;
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace kd
