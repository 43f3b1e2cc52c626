// KD_NVRTC_CHECK: the NVRTC member of the check-macro family in common/error.hpp.
#pragma once

#include <nvrtc.h>

#include "common/error.hpp"

#define KD_NVRTC_CHECK(call, object)                                                         \
  do {                                                                                       \
    const nvrtcResult kd_rc_ = (call);                                                       \
    if (kd_rc_ != NVRTC_SUCCESS)                                                             \
      ::kd::throw_call_error(::kd::ErrorDomain::nvrtc, static_cast<int>(kd_rc_),             \
                             nvrtcGetErrorString(kd_rc_), #call, (object), KD_WHERE);        \
  } while (0)
