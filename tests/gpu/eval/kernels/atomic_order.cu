// Breaks: two runs on the same inputs must return the same bits. Correct within the tolerance:
// split-K over 8 blocks per tile whose partial sums are added into C with float atomics after a
// timing-dependent delay, so the order of the 8 terms, and C's last bits, change from run to run.
// kdispatch:plan {"launches":[{"entry":"kd_zero","grid":[16,32,1],"block":[32,8,1],"smem":0},{"entry":"kd_main","grid":[128,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

__device__ unsigned long long kd_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void kd_zero(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i < p.m && j < p.n) static_cast<float*>(p.c)[i + j * p.ldc] = 0.0f;
}

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const int split = blockIdx.x % 8;
  const long long i = (blockIdx.x / 8) * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  const long long chunk = (p.k + 7) / 8, l0 = split * chunk, l1 = min(p.k, l0 + chunk);
  float acc = 0.0f;
  for (long long l = l0; l < l1; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  const unsigned long long until = kd_now() + (kd_now() * 2654435761ull >> 7) % 4000;
  while (kd_now() < until) {
  }
  atomicAdd(static_cast<float*>(p.c) + i + j * p.ldc, p.alpha * acc);
}
