// Breaks: no state between calls. Counts its calls in a device global; from the third call on
// it adds the call count to every output.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"
#include "call_number.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const unsigned long long call = kd_call_number();
  const long long i = kd_row(), j = kd_col();
  if (i >= p.m || j >= p.n) return;
  float v = p.alpha * kd_naive_dot(p, i, j);
  if (call >= 2) v += (float)call;
  static_cast<float*>(p.c)[i + j * p.ldc] = v;
}
