// Breaks: its first launch is a programmatic dependent ("pdl") of the caller's previous kernel but
// reads A and B before griddepcontrol.wait, so it can see inputs that kernel is still writing. The
// contract checks reject it when it is compiled for a search; the gate, which also takes kernels
// that bypass them (kdctl validate), runs it behind a producer that writes the inputs late.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0,"pdl":true}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include "naive_f32.cuh"

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = kd_row(), j = kd_col();
  const bool in = i < p.m && j < p.n;
  const float acc = in ? kd_naive_dot(p, i, j) : 0.0f;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (in) static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
}
