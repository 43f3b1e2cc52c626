#include "handle_workspaces.hpp"

#include <array>
#include <atomic>
#include <cstdint>

namespace kd::shim {
namespace {

// Open addressing with linear probing; a slot, once claimed by a handle, keeps it (clearing only
// zeroes the workspace), so lookups never race with removals. 4096 slots hold far more handles than
// a process creates (PyTorch: one per thread and device).
struct Slot {
  std::atomic<cublasContext*> handle{nullptr};
  std::atomic<void*> ptr{nullptr};
  std::atomic<std::size_t> bytes{0};
};
constexpr std::size_t kSlots = 4096;
constinit std::array<Slot, kSlots> g_slots{};

std::size_t home(const cublasContext* h) noexcept {
  auto x = reinterpret_cast<std::uintptr_t>(h);
  x ^= x >> 17;
  x *= 0xed5ad4bbu;
  x ^= x >> 11;
  return static_cast<std::size_t>(x) % kSlots;
}

// The slot of `h`; with `claim`, an empty one is taken for it. nullptr when absent (or full).
Slot* find(cublasContext* h, bool claim) noexcept {
  if (h == nullptr) return nullptr;
  const std::size_t start = home(h);
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[(start + i) % kSlots];
    cublasContext* owner = s.handle.load(std::memory_order_acquire);
    if (owner == h) return &s;
    if (owner == nullptr) {
      if (!claim) return nullptr;
      if (s.handle.compare_exchange_strong(owner, h, std::memory_order_acq_rel) || owner == h) return &s;
    }
  }
  return nullptr;
}

}  // namespace

void set_handle_workspace(cublasContext* handle, void* ptr, std::size_t bytes) noexcept {
  if (ptr == nullptr || bytes == 0) {
    clear_handle_workspace(handle);
    return;
  }
  Slot* s = find(handle, true);
  if (s == nullptr) return;
  // The pair is read by the thread that set it (or after the handle was handed over, which orders
  // the accesses): cuBLAS excludes concurrent use of one handle, so no reader sees half an update.
  s->ptr.store(ptr, std::memory_order_release);
  s->bytes.store(bytes, std::memory_order_release);
}

void clear_handle_workspace(cublasContext* handle) noexcept {
  Slot* s = find(handle, false);
  if (s == nullptr) return;
  s->bytes.store(0, std::memory_order_release);
  s->ptr.store(nullptr, std::memory_order_release);
}

LentWorkspace handle_workspace(cublasContext* handle) noexcept {
  Slot* s = find(handle, false);
  if (s == nullptr) return {};
  const std::size_t bytes = s->bytes.load(std::memory_order_acquire);
  void* ptr = s->ptr.load(std::memory_order_acquire);
  if (ptr == nullptr || bytes == 0) return {};
  return {ptr, bytes};
}

}  // namespace kd::shim
