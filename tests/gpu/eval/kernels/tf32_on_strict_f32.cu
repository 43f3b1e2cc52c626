// Breaks: the caller's precision class. Rounds A and B to TF32 (10-bit mantissa) before each
// product, as a TF32 tensor-core kernel would, on a key whose math mode forbids TF32.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

__device__ float to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(to_tf32(A[i + l * p.lda]), to_tf32(B[l + j * p.ldb]), acc);
  static_cast<float*>(p.c)[i + j * p.ldc] = p.alpha * acc;
}
