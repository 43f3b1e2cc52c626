#include <cstdio>

#include "commands.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "kdctl.hpp"

namespace kd::kdctl {

void setup_devices(CLI::App& sub, std::function<int()>& action) {
  sub.callback([&action] {
    action = [] {
      if (cu_driver() == nullptr) {
        std::fprintf(stderr, "kdctl: no usable GPU: %s\n", cu_unavailable_reason().c_str());
        return static_cast<int>(kNoGpu);
      }
      const auto devices = list_devices();
      if (devices.empty()) {
        std::fprintf(stderr, "kdctl: no usable GPU: the CUDA driver reports no device\n");
        return static_cast<int>(kNoGpu);
      }
      for (const DeviceInfo& d : devices) {
        std::printf("%d arch=%s gpu=\"%s\" sms=%d memory=%.1fGiB l2=%dMiB\n", d.ordinal,
                    d.arch.c_str(), d.name.c_str(), d.sms, d.memory_bytes / 1073741824.0,
                    d.l2_bytes >> 20);
      }
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace kd::kdctl
