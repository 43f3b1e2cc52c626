// Breaks: outputs of timed runs are checked too. Correct for its first 8 calls (the gate's),
// then returns without computing, as a kernel that guessed the timing loop had begun would.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

__device__ unsigned long long kd_blocks_seen;

extern "C" __global__ void kd_main(kd_gemm_args p) {
  __shared__ unsigned long long call;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    call = atomicAdd(&kd_blocks_seen, 1ull) / (gridDim.x * gridDim.y * gridDim.z);
  __syncthreads();
  if (call >= 8) return;
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
}
