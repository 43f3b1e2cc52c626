// Breaks: outputs of timed runs are checked too. Correct for its first 8 calls (the gate's),
// then returns without computing, as a kernel that guessed the timing loop had begun would.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"
#include "call_number.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const unsigned long long call = kd_call_number();
  if (call >= 8) return;
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * kd_naive_dot(p, i, j);
}
