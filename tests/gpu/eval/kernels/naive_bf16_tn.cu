// Correct: naive bf16 GEMM, ta=T tb=N (nn.Linear's call), f32 accumulation, leading dimensions
// taken from the arguments (the test pads them above the minimum).
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"block":[32,8,1],"smem":0}],"workspace":0}
#include <kdispatch/gemm.cuh>
#include <cuda_bf16.h>

extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y, z = blockIdx.z;
  if (i >= p.m || j >= p.n || z >= p.batch) return;
  const __nv_bfloat16* A = static_cast<const __nv_bfloat16*>(p.a) + z * p.stride_a;
  const __nv_bfloat16* B = static_cast<const __nv_bfloat16*>(p.b) + z * p.stride_b;
  __nv_bfloat16* C = static_cast<__nv_bfloat16*>(p.c) + z * p.stride_c;
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l)
    acc = fmaf(__bfloat162float(A[l + i * p.lda]), __bfloat162float(B[l + j * p.ldb]), acc);
  float v = p.alpha * acc;
  if (p.beta != 0.0f) v += p.beta * __bfloat162float(C[i + j * p.ldc]);
  if (p.bias != nullptr) v += __bfloat162float(static_cast<const __nv_bfloat16*>(p.bias)[i]);
  C[i + j * p.ldc] = __float2bfloat16_rn(v);
}
