// The argument struct of one call, whatever the operator: the kernel contract passes each
// operator's struct (kd_gemm_args, kd_row_args) by value as an entry point's only parameter, so the
// gate, the serving timer and a kernel candidate only need its bytes. A cuBLASLt candidate, which
// computes GEMMs only, reads them back as kd_gemm_args.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace kd::eval {

struct KernelArgs {
  static constexpr std::size_t kMaxBytes = 128;
  alignas(16) std::array<std::byte, kMaxBytes> bytes{};
  std::size_t size = 0;

  template <class T>
  static KernelArgs of(const T& value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxBytes && alignof(T) <= 16);
    KernelArgs a;
    std::memcpy(a.bytes.data(), &value, sizeof(T));
    a.size = sizeof(T);
    return a;
  }
  // The struct these bytes hold when it is a T (by size: the contracts' structs differ in size).
  template <class T>
  bool holds() const noexcept {
    return size == sizeof(T);
  }
  template <class T>
  T as() const noexcept {
    T value{};
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
  }
};

}  // namespace kd::eval
