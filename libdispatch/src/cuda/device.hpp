// The device part of a key: what identifies a GPU model to the cache.
#pragma once

#include <string>
#include <vector>

namespace kd {

struct DeviceInfo {
  int ordinal = 0;
  std::string arch;  // "sm_90"
  std::string name;  // "NVIDIA H100 80GB HBM3", as the driver names it
  int sms = 0;       // multiprocessor count
  int cc_major = 0;
  int cc_minor = 0;
  long long memory_bytes = 0;
  int l2_bytes = 0;
  int max_smem_per_block_optin_bytes = 0;
};

// Reads device `ordinal` through the Driver API; throws kd::Error when there is no such device.
DeviceInfo query_device(int ordinal);

// Whether the current context's device has stream-ordered allocation (cuMemAllocAsync; memory
// pools), which graph memory nodes need. False when there is no current context. Never throws.
bool current_device_has_memory_pools() noexcept;

// Every device the driver reports; empty without a driver. Never throws.
std::vector<DeviceInfo> list_devices() noexcept;

}  // namespace kd
