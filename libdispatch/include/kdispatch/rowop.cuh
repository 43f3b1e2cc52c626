/* kdispatch kernel contract for row operators (rmsnorm, layernorm, softmax). Handed to NVRTC as
 * <kdispatch/rowop.cuh>.
 *
 * A candidate is one CUDA C++ translation unit of device code whose entry points are
 *   extern "C" __global__ void NAME(kd_row_args args)
 * with a launch plan in a `kdispatch:plan` comment, exactly as for GEMM (<kdispatch/gemm.cuh>: the
 * plan, "pdl" and KD_GRID_DEPENDENCY_WAIT() mean the same here).
 *
 * The tensor is `rows` rows of `cols` contiguous elements: row r of x starts at x + r*cols elements
 * (likewise y). For every row, with all arithmetic in f32 or wider and y rounded to the key's dtype:
 *   rmsnorm   y = x * rsqrt(mean(x^2) + eps)                      (* weight[c] when non-null)
 *   layernorm y = (x - mean(x)) * rsqrt(var(x) + eps), var biased  (* weight[c]) (+ bias[c])
 *   softmax   y = exp(x - max(x)) / sum(exp(x - max(x)))           (weight, bias, eps unused)
 * weight and bias are non-null exactly when the key says weight=1 / bias=1. x, weight and bias are
 * read-only; nothing outside y (and the plan's workspace, which is not zeroed between calls) may be
 * written. Rows are independent: a kernel must not assume anything about values (the gate's inputs
 * include rows of mean 1000 and std 0.1, where E[x^2] - E[x]^2 loses every significant bit).
 *
 * This struct is ABI: its layout is fixed (static_assert below and in the host code).
 */
#ifndef KDISPATCH_ROWOP_CUH
#define KDISPATCH_ROWOP_CUH

struct kd_row_args {
  const void* x;
  const void* weight; /* cols elements of the key's dtype, or null */
  const void* bias;   /* cols elements of the key's dtype, or null */
  void* y;
  void* workspace;
  long long rows, cols;
  float eps;
  int reserved; /* zero */
};

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(kd_row_args) == 64, "kd_row_args layout is ABI");
#endif

/* KD_GRID_DEPENDENCY_WAIT(): the wait a "pdl" launch owes the kernel before it (<kdispatch/gemm.cuh>). */
#include "kdispatch/grid_dependency.cuh"

#endif /* KDISPATCH_ROWOP_CUH */
