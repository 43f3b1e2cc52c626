// Breaks: no state between calls. Remembers its output per A address and, when called again
// with the same A pointer, replays it instead of computing (stale once the data changes).
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

__device__ const void* kd_last_a[16 * 32];
__device__ float kd_cache[512 * 256];

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  const bool hit = kd_last_a[block] == p.a;  // each block keeps its own slot: no race between blocks
  __syncthreads();
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i < p.m && j < p.n) {
    float* C = static_cast<float*>(p.c);
    if (hit) {
      C[i + j * p.ldc] = kd_cache[i + j * p.m];
    } else {
      const float* A = static_cast<const float*>(p.a);
      const float* B = static_cast<const float*>(p.b);
      float acc = 0.0f;
      for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
      C[i + j * p.ldc] = kd_cache[i + j * p.m] = p.alpha * acc;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) kd_last_a[block] = p.a;
}
