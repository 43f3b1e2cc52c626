// The CUDA Driver API, loaded at run time from libcuda.so.1.
//
// Linking libcuda would stop our programs (and any application that loads libkdispatch.so) from
// starting on a machine without a GPU driver. Instead the driver is opened on first use; when it
// is missing or has no device, cu_available() says why and callers fall back or skip.
#pragma once

#include <cuda.h>

#include <atomic>
#include <string>
#include <string_view>

namespace kd {

// X-macro list of every driver entry point the project uses. Names go through cuda.h's macros, so
// `cuMemAlloc` resolves the versioned symbol (`cuMemAlloc_v2`) exactly as a linked program would.
#define KD_CU_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)              \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)       \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)        \
  X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetCurrent) X(cuCtxSetCurrent)        \
  X(cuCtxGetDevice) X(cuCtxSynchronize)                                               \
  X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)  \
  X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)  \
  X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH)          \
  X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)      \
  X(cuMemsetD8) X(cuMemsetD32) X(cuMemsetD8Async) X(cuMemsetD32Async)                 \
  X(cuMemAllocHost) X(cuMemFreeHost) X(cuPointerGetAttribute)                         \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamIsCapturing)  \
  X(cuStreamGetCtx) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)              \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventQuery)                         \
  X(cuThreadExchangeStreamCaptureMode) X(cuStreamBeginCapture) X(cuStreamEndCapture)  \
  X(cuGraphDestroy) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy)      \
  X(cuGraphCreate) X(cuGraphClone) X(cuGraphAddChildGraphNode)                        \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuTensorMapEncodeTiled)

struct CudaDriver {
#define KD_CU_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KD_CU_FUNCTIONS(KD_CU_MEMBER)
#undef KD_CU_MEMBER
  int driver_version = 0;
};

// Loads the driver and calls cuInit(0) once (thread-safe). Returns nullptr when the driver cannot
// be loaded or initialised; cu_unavailable_reason() then says why. Never throws.
namespace detail {
extern std::atomic<const CudaDriver*> loaded_driver;  // set once the driver loaded and cuInit passed
const CudaDriver* cu_driver_slow() noexcept;
}  // namespace detail
inline const CudaDriver* cu_driver() noexcept {
  // One acquire load on the hot path once the driver is up; the first call loads it.
  const CudaDriver* d = detail::loaded_driver.load(std::memory_order_acquire);
  return d != nullptr ? d : detail::cu_driver_slow();
}
std::string cu_unavailable_reason();

// The loaded driver; throws kd::Error naming the reason when there is none. Use with KD_CU_CHECK:
//   KD_CU_CHECK(kd::cu().cuMemAlloc(&p, bytes), "output buffer");
const CudaDriver& cu();

// Number of CUDA devices; 0 when the driver is missing or reports none. Never throws.
int cu_device_count() noexcept;

// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", or a number when the
// driver is not loaded.
std::string cuda_error_name(CUresult result);

}  // namespace kd
