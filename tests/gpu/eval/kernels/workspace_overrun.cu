// Breaks: no writes outside the workspace. Asks for 4 KiB and writes past it.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":4096}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
  if (i == 0 && j == 0) static_cast<float*>(p.workspace)[1024 + 16] = 1.0f;  // 4 KiB + 64 bytes
}
