// One kernel launch of a plan. A programmatic dependent launch ("pdl" in the plan) goes through
// cuLaunchKernelEx with programmatic stream serialization: the kernel may start while the launch
// before it on the stream finishes, and waits for it with griddepcontrol.wait. CUDA records the
// same dependency as a programmatic edge when the stream is being captured into a graph.
#pragma once

#include <array>
#include <cstdint>

#include <cuda.h>

#include "cuda/driver.hpp"

namespace kd {

inline CUresult launch_kernel(const CudaDriver& d, CUfunction f, const std::array<std::uint32_t, 3>& grid,
                              const std::array<std::uint32_t, 3>& block, std::uint32_t smem_bytes, CUstream stream,
                              void** params, bool pdl) noexcept {
  if (!pdl)
    return d.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem_bytes, stream, params,
                            nullptr);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block[0];
  config.blockDimY = block[1];
  config.blockDimZ = block[2];
  config.sharedMemBytes = smem_bytes;
  config.hStream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return d.cuLaunchKernelEx(&config, f, params, nullptr);
}

}  // namespace kd
