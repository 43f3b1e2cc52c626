// GPU tests: KD_REQUIRE_GPU() skips (GTEST_SKIP, reported by ctest as skipped, never passed) when
// no CUDA driver or device is usable, and otherwise leaves the primary context of device 0 current.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace kd::test {

// Empty when a GPU is usable and device 0's primary context is current; otherwise why not.
std::string gpu_unavailable_reason();

}  // namespace kd::test

#define KD_REQUIRE_GPU()                                                      \
  do {                                                                        \
    const std::string kd_reason_ = ::kd::test::gpu_unavailable_reason();      \
    if (!kd_reason_.empty()) GTEST_SKIP() << "no GPU: " << kd_reason_;        \
  } while (0)
