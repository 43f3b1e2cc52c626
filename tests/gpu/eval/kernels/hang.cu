// Breaks: a kernel must finish. Spins forever on a value nobody changes.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  volatile const long long* m = &p.m;
  while (*m > 0) {
    asm volatile("nanosleep.u32 1000;");
  }
}
