// Breaks: inputs are read-only. Computes correctly, then scribbles on A.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
  // The last column of A, which only threads of this row read, after they have.
  if (j == p.n - 1) const_cast<float*>(static_cast<const float*>(p.a))[i + (p.k - 1) * p.lda] = 0.0f;
}
