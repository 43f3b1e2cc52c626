// KD_NVRTC_CHECK: the NVRTC member of the check-macro family in common/error.hpp.
#pragma once

#include <nvrtc.h>

#include <fmt/format.h>

#include "common/error.hpp"

#define KD_NVRTC_CHECK(call, object)                                                         \
  do {                                                                                       \
    const nvrtcResult kd_rc_ = (call);                                                       \
    if (kd_rc_ != NVRTC_SUCCESS)                                                             \
      throw ::kd::Error(::kd::ErrorDomain::nvrtc, static_cast<int>(kd_rc_),                  \
                        fmt::format("{} failed on {}: {} ({})", #call, (object),             \
                                    nvrtcGetErrorString(kd_rc_), KD_WHERE));                  \
  } while (0)
