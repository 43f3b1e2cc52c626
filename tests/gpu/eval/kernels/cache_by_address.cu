// Breaks: no state between calls. Remembers its output per A address and, when called again
// with the same A pointer, replays it instead of computing (stale once the data changes).
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

__device__ const void* kd_last_a[16 * 32];
__device__ float kd_cache[512 * 256];

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  const bool hit = kd_last_a[block] == p.a;  // each block keeps its own slot: no race between blocks
  __syncthreads();
  const long long i = kd_row(), j = kd_col();
  if (i < p.m && j < p.n) {
    float* C = static_cast<float*>(p.c);
    if (hit) C[i + j * p.ldc] = kd_cache[i + j * p.m];
    else C[i + j * p.ldc] = kd_cache[i + j * p.m] = p.alpha * kd_naive_dot(p, i, j);
  }
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) kd_last_a[block] = p.a;
}
