// Breaks: inputs are read-only. Computes correctly, then scribbles on A.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
  // The last column of A, which only threads of this row read, after they have.
  if (j == p.n - 1) const_cast<float*>(A)[i + (p.k - 1) * p.lda] = 0.0f;
}
