// Breaks: no writes outside C. Computes correctly, and also writes just past C's last element.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  float* C = static_cast<float*>(p.c);
  C[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
  if (i == 0 && j == 0) C[p.ldc * p.n + 100] = 1.0f;
}
