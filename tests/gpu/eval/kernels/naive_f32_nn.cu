// Correct: naive f32 GEMM, ta=N tb=N, one thread per output, any alpha/beta, bias, strided batch.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y, z = blockIdx.z;
  if (i >= p.m || j >= p.n || z >= p.batch) return;
  const float* A = static_cast<const float*>(p.a) + z * p.stride_a;
  const float* B = static_cast<const float*>(p.b) + z * p.stride_b;
  float* C = static_cast<float*>(p.c) + z * p.stride_c;
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  float v = p.alpha * acc;
  if (p.beta != 0.0f) v += p.beta * C[i + j * p.ldc];
  if (p.bias != nullptr) v += static_cast<const float*>(p.bias)[i];
  C[i + j * p.ldc] = v;
}
