// Correct: its first launch is a programmatic dependent ("pdl") of the caller's previous kernel and
// executes griddepcontrol.wait before any global memory access, as gemm.cuh requires.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0,"pdl":true}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
}
