#include "eval/device_memory.hpp"

#include <utility>

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd::eval {

DeviceBuffer::DeviceBuffer(std::uint64_t bytes, std::string what)
    : bytes_(bytes), what_(std::move(what)) {
  KD_CU_CHECK(cu().cuMemAlloc(&ptr_, bytes == 0 ? 256 : bytes), what_);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)),
      what_(std::move(other.what_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    what_ = std::move(other.what_);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  // After a sticky CUDA error cuMemFree fails; the context's teardown frees it then.
  if (ptr_ != 0) cu().cuMemFree(ptr_);
  ptr_ = 0;
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

GuardedBuffer::GuardedBuffer(std::uint64_t body_bytes, const std::string& what)
    : block_(round_up(body_bytes, 256) + 2 * kGuardBytes, what),
      body_bytes_(round_up(body_bytes, 256)) {}

void GuardedBuffer::fill_sentinel(CUstream stream) const {
  KD_CU_CHECK(cu().cuMemsetD8Async(base(), kSentinelByte, total_bytes(), stream), "guard fill");
}

}  // namespace kd::eval
