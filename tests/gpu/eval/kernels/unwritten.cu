// Breaks: every output must be written. Returns at once (the "instant" kernel): C keeps its
// poison, or whatever an earlier owner of the memory left there.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  if (p.m < 0) static_cast<float*>(p.c)[0] = 0.0f;  // never true: keeps the parameter used
}
