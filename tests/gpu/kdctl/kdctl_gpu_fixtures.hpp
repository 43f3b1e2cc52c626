// What the kdctl GPU tests store, validate and prewarm: two f32 shapes (tests/gpu/eval's 512 x 256
// x 384 and a 256 x 256 x 384 one, ta=N tb=N, beta = 0) and two kernels behind a
// `// kdispatch:plan` line of [32, 8] blocks: a correct naive GEMM, one thread per output
// (tests/gpu/eval/kernels/naive_f32_nn.cu without batch and bias), and one that writes every
// output as zero (which the gate must fail).
#pragma once

#include <string>
#include <string_view>

namespace kd::test {

inline const std::string kShape512 =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=256 k=384 lda=512 ldb=384 ldc=512 batch=1 "
    "epilogue=none beta0=1";
inline const std::string kShape256 =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=256 n=256 k=384 lda=256 ldb=384 ldc=256 batch=1 "
    "epilogue=none beta0=1";

inline std::string naive_f32_kernel(std::string_view plan_line) {
  return std::string(plan_line) + R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float* C = static_cast<float*>(p.c);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  float v = p.alpha * acc;
  if (p.beta != 0.0f) v += p.beta * C[i + j * p.ldc];
  C[i + j * p.ldc] = v;
}
)";
}

inline std::string zeros_kernel(std::string_view plan_line) {
  return std::string(plan_line) + R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_main(kd_gemm_args p) {
  const long long i = blockIdx.x * 32ll + threadIdx.x, j = blockIdx.y * 8ll + threadIdx.y;
  if (i >= p.m || j >= p.n) return;
  static_cast<float*>(p.c)[i + j * p.ldc] = 0.0f;
}
)";
}

}  // namespace kd::test
