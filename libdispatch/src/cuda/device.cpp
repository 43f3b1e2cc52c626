#include "cuda/device.hpp"

#include <array>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd {

DeviceInfo query_device(int ordinal) {
  const CudaDriver& d = cu();
  const std::string what = fmt::format("device {}", ordinal);
  CUdevice dev = 0;
  KD_CU_CHECK(d.cuDeviceGet(&dev, ordinal), what);
  DeviceInfo info;
  info.ordinal = ordinal;
  std::array<char, 256> name{};
  KD_CU_CHECK(d.cuDeviceGetName(name.data(), static_cast<int>(name.size()), dev), what);
  info.name = name.data();
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KD_CU_CHECK(d.cuDeviceGetAttribute(&v, a, dev), what);
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.max_smem_per_block_optin_bytes = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.arch = fmt::format("sm_{}{}", info.cc_major, info.cc_minor);
  size_t total = 0;
  KD_CU_CHECK(d.cuDeviceTotalMem(&total, dev), what);
  info.memory_bytes = static_cast<long long>(total);
  return info;
}

bool current_device_has_memory_pools() noexcept {
  const CudaDriver* d = cu_driver();
  CUdevice dev = 0;
  int pools = 0;
  return d != nullptr && d->cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
         d->cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev) == CUDA_SUCCESS &&
         pools != 0;
}

std::vector<DeviceInfo> list_devices() noexcept {
  std::vector<DeviceInfo> out;
  try {
    const int n = cu_device_count();
    for (int i = 0; i < n; ++i) out.push_back(query_device(i));
  } catch (...) {
  }
  return out;
}

}  // namespace kd
