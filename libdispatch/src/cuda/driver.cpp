#include "cuda/driver.hpp"

#include <mutex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/loaded_library.hpp"

namespace kd {
namespace {

constexpr const char* kSoname = "libcuda.so.1";

using DriverState = LoadedLibrary<CudaDriver>;

DriverState load_driver() {
  DriverState s;
  void* lib = open_library(kSoname, "CUDA driver", s.reason);
  if (lib == nullptr) return s;
#define KD_CU_RESOLVE(fn)                                                                                  \
  s.table.fn =                                                                                             \
      reinterpret_cast<decltype(&::fn)>(library_symbol(lib, KD_STRINGIFY(fn), "CUDA driver", kSoname, s.reason)); \
  if (s.table.fn == nullptr) return s;
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

const DriverState& state() { return loaded_once<load_driver>(); }

}  // namespace

std::atomic<const CudaDriver*> detail::loaded_driver{nullptr};

const CudaDriver* detail::cu_driver_slow() noexcept {
  const CudaDriver* d = usable_once<load_driver>();
  if (d != nullptr) loaded_driver.store(d, std::memory_order_release);
  return d;
}

std::string cu_unavailable_reason() { return state().unavailable_reason(); }

const CudaDriver& cu() { return state().require(); }

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
