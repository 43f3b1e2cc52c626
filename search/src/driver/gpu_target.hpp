// What a proposer knows about the GPU beyond the key (ProposalContext::target): the builtin
// families size tiles, rings and grids by it, the LLM proposer's prompt names it. The daemon's
// search runner and kdctl search build it from the device; a default one (sm_90, 132 SMs,
// 227 KiB of opt-in shared memory) stands where there is no GPU (a dry run, unit tests).
#pragma once

#include <string>

#include "cuda/device.hpp"

namespace kd::search {

struct GpuTarget {
  std::string arch = "sm_90";
  int sms = 132;
  int smem_optin_bytes = 232448;  // per-block opt-in limit (227 KiB on sm_90)
  int cc_major = 9;
  static GpuTarget from(const DeviceInfo& d);
};

}  // namespace kd::search
