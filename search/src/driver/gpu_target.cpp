#include "driver/gpu_target.hpp"

namespace kd::search {

GpuTarget GpuTarget::from(const DeviceInfo& d) {
  return GpuTarget{d.arch, d.sms, d.max_smem_per_block_optin_bytes, d.cc_major};
}

}  // namespace kd::search
