// GPU tests: KD_REQUIRE_GPU() skips (GTEST_SKIP, reported by ctest as skipped, never passed) when
// no CUDA driver or device is usable, and otherwise leaves the primary context of device 0 current;
// DeviceBuffer holds their device memory.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace kd::test {

// Empty when a GPU is usable and device 0's primary context is current; otherwise why not.
std::string gpu_unavailable_reason();

// `bytes` of device memory in the current context, freed with the object. Throws kd::Error (cuda)
// when the allocation fails.
class DeviceBuffer {
public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return reinterpret_cast<void*>(ptr); }

  CUdeviceptr ptr = 0;
};

}  // namespace kd::test

#define KD_REQUIRE_GPU()                                                      \
  do {                                                                        \
    const std::string kd_reason_ = ::kd::test::gpu_unavailable_reason();      \
    if (!kd_reason_.empty()) GTEST_SKIP() << "no GPU: " << kd_reason_;        \
  } while (0)
