// Device memory for the evaluator: an owning allocation and the guarded layout
// [guard][body][guard] that catches writes outside a buffer.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace kd::eval {

// One cuMemAlloc'ed block, freed on destruction. Requires a current context.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(std::uint64_t bytes, std::string what);  // throws kd::Error on failure
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const noexcept { return ptr_; }
  std::uint64_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* as() const noexcept { return reinterpret_cast<T*>(ptr_); }

private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  std::uint64_t bytes_ = 0;
  std::string what_;
};

// Guard bands of this many bytes sit before and after every output and workspace body.
inline constexpr std::uint64_t kGuardBytes = 64 * 1024;
// Byte written into guard bands and padding; anything else found there was written by a kernel.
inline constexpr unsigned char kSentinelByte = 0xA5;

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple);

// [guard][body rounded up to 256 bytes][guard]; body() is what a kernel is handed.
class GuardedBuffer {
public:
  GuardedBuffer() = default;
  GuardedBuffer(std::uint64_t body_bytes, const std::string& what);
  CUdeviceptr body() const noexcept { return block_.get() + kGuardBytes; }
  CUdeviceptr base() const noexcept { return block_.get(); }
  std::uint64_t body_bytes() const noexcept { return body_bytes_; }  // rounded
  std::uint64_t total_bytes() const noexcept { return block_.bytes(); }
  // Fills all of it, guards and body, with the sentinel (async on `stream`).
  void fill_sentinel(CUstream stream) const;

private:
  DeviceBuffer block_;
  std::uint64_t body_bytes_ = 0;
};

}  // namespace kd::eval
