// Breaks: a kernel must not fault. Stores through a wild pointer.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  float* wild = reinterpret_cast<float*>(0xDEAD00000000ull + (unsigned long long)p.m * 4096);
  wild[threadIdx.x] = 1.0f;
}
