// Breaks: every output must be written. Writes only the first half of the rows.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m / 2 || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
}
