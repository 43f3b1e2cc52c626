#include "driver/gpu_target.hpp"

namespace kd::search {

GpuTarget GpuTarget::from(const DeviceInfo& d) {
  GpuTarget t;
  t.arch = d.arch;
  t.sms = d.sms;
  t.smem_optin_bytes = d.max_smem_per_block_optin_bytes;
  t.cc_major = d.cc_major;
  return t;
}

}  // namespace kd::search
