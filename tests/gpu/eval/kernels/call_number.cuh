// What the kernels that keep state between calls share, pasted in place of their
// `#include "call_number.cuh"` when they are embedded (tests/gpu/eval/CMakeLists.txt): which
// launch of the module this is (0 first), from a device global that every block adds itself to
// once. Every thread of the block must call it (it synchronizes the block).
__device__ unsigned long long kd_blocks_seen;

__device__ unsigned long long kd_call_number() {
  __shared__ unsigned long long call;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    call = atomicAdd(&kd_blocks_seen, 1ull) / (gridDim.x * gridDim.y * gridDim.z);
  __syncthreads();
  return call;
}
