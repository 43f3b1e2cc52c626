// Breaks: a kernel must not fault. Executes the trap instruction.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  if (p.m > 0) asm volatile("trap;");
}
