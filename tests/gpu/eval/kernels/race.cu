// Breaks: two runs on the same inputs must agree. Split-K over 4 blocks per tile with a plain
// read-modify-write of C (no atomics) and a timing-dependent delay inside the window.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[64,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

__device__ unsigned long long kd_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const int split = blockIdx.x % 4;
  const long long i = (blockIdx.x / 4) * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  volatile float* C = static_cast<float*>(p.c);
  const long long chunk = (p.k + 3) / 4, l0 = split * chunk, l1 = min(p.k, l0 + chunk);
  float acc = 0.0f;
  for (long long l = l0; l < l1; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  const long long idx = i + j * p.ldc;
  if (split == 0) {
    C[idx] = p.alpha * acc;
  } else {
    const float old = C[idx];
    const unsigned long long until = kd_now() + (kd_now() * 2654435761ull >> 7) % 4000;
    while (kd_now() < until) {
    }
    C[idx] = old + p.alpha * acc;
  }
}
