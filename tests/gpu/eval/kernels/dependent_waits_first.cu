// Correct: its first launch is a programmatic dependent ("pdl") of the caller's previous kernel and
// executes griddepcontrol.wait before any global memory access, as gemm.cuh requires.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0,"pdl":true}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
}
