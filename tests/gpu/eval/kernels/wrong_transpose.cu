// Breaks: the result must be right. Reads A as if ta=T on a ta=N key.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[(l + i * p.k) % (p.lda * p.k)], B[l + j * p.ldb], acc);
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
}
