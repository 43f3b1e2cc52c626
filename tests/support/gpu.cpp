#include "support/gpu.hpp"

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd::test {

std::string gpu_unavailable_reason() {
  const CudaDriver* d = cu_driver();
  if (d == nullptr) return cu_unavailable_reason();
  if (cu_device_count() == 0) return "the CUDA driver reports no device";
  // The primary context of device 0, retained for the life of the test process.
  static const CUresult ctx_rc = [d] {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CUresult rc = d->cuDeviceGet(&dev, 0);
    if (rc == CUDA_SUCCESS) rc = d->cuDevicePrimaryCtxRetain(&ctx, dev);
    if (rc == CUDA_SUCCESS) rc = d->cuCtxSetCurrent(ctx);
    return rc;
  }();
  if (ctx_rc != CUDA_SUCCESS) return "cannot make device 0 current: " + cuda_error_name(ctx_rc);
  CUcontext current = nullptr;
  d->cuCtxGetCurrent(&current);
  if (current == nullptr) {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    d->cuDeviceGet(&dev, 0);
    d->cuDevicePrimaryCtxRetain(&ctx, dev);
    d->cuCtxSetCurrent(ctx);
  }
  return {};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) { KD_CU_CHECK(cu().cuMemAlloc(&ptr, bytes), "test buffer"); }

DeviceBuffer::~DeviceBuffer() { cu().cuMemFree(ptr); }

}  // namespace kd::test
