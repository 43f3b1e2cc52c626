// What most test kernels share, pasted in place of their `#include "naive_f32.cuh"` when they are
// embedded (tests/gpu/eval/CMakeLists.txt), so each stays one translation unit as the contract
// asks: the output element a thread of a [32, 8] block computes, and the naive f32 product of A's
// row i (ta=N) and B's column j (tb=N), summed in k order. A kernel that includes it is no longer
// a file `kdctl validate --kernel` can take as it is; tools/dev/device-run.sh validates
// naive_f32_nn, tf32_on_strict_f32 and race, which stand alone.
__device__ long long kd_row() { return blockIdx.x * 32ll + threadIdx.x; }
__device__ long long kd_col() { return blockIdx.y * 8ll + threadIdx.y; }

__device__ float kd_naive_dot(const kd_gemm_args& p, long long i, long long j) {
  const float* A = static_cast<const float*>(p.a);
  const float* B = static_cast<const float*>(p.b);
  float acc = 0.0f;
  for (long long l = 0; l < p.k; ++l) acc = fmaf(A[i + l * p.lda], B[l + j * p.ldb], acc);
  return acc;
}
