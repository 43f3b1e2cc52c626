#include "cuda/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd {
namespace {

struct DriverState {
  CudaDriver table;
  bool ok = false;
  std::string reason;
};

DriverState load_driver() {
  DriverState s;
  // RTLD_NOLOAD first: inside an application the driver is normally loaded already.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    s.reason = fmt::format("no CUDA driver: cannot load libcuda.so.1 ({})", err ? err : "unknown");
    return s;
  }
#define KD_CU_RESOLVE(fn)                                                              \
  s.table.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, KD_STRINGIFY(fn)));          \
  if (s.table.fn == nullptr) {                                                         \
    s.reason = "CUDA driver too old: libcuda.so.1 lacks " KD_STRINGIFY(fn);              \
    return s;                                                                          \
  }
  KD_CU_FUNCTIONS(KD_CU_RESOLVE)
#undef KD_CU_RESOLVE
  const CUresult rc = s.table.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    s.table.cuGetErrorName(rc, &name);
    s.reason = fmt::format("CUDA driver present but cuInit failed: {}", name ? name : "?");
    return s;
  }
  s.table.cuDriverGetVersion(&s.table.driver_version);
  s.ok = true;
  return s;
}

const DriverState& state() {
  static const DriverState s = load_driver();
  return s;
}

}  // namespace

std::atomic<const CudaDriver*> detail::loaded_driver{nullptr};

const CudaDriver* detail::cu_driver_slow() noexcept {
  try {
    const DriverState& s = state();
    if (!s.ok) return nullptr;
    loaded_driver.store(&s.table, std::memory_order_release);
    return &s.table;
  } catch (...) {
    return nullptr;
  }
}

std::string cu_unavailable_reason() {
  const DriverState& s = state();
  return s.ok ? std::string() : s.reason;
}

const CudaDriver& cu() {
  const DriverState& s = state();
  if (!s.ok) throw Error(ErrorDomain::cuda, 0, s.reason);
  return s.table;
}

int cu_device_count() noexcept {
  const CudaDriver* d = cu_driver();
  int n = 0;
  if (d == nullptr || d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

std::string cuda_error_name(CUresult result) {
  const CudaDriver* d = cu_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d != nullptr) {
    d->cuGetErrorName(result, &name);
    d->cuGetErrorString(result, &text);
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  return text ? fmt::format("{}: {}", name, text) : std::string(name);
}

}  // namespace kd
