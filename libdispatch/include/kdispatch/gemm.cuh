/* kdispatch kernel contract for GEMM. Handed to NVRTC as <kdispatch/gemm.cuh>.
 *
 * A candidate is one CUDA C++ translation unit of device code whose entry points are
 *   extern "C" __global__ void NAME(kd_gemm_args args)
 * and which carries a launch plan in a comment:
 *   // kdispatch:plan {"launches":[{"entry":"kd_main","grid":[128,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
 * Launches run in order on the caller's stream. A launch may add "pdl":true (sm_90+): it may then
 * start while the kernel before it on the stream finishes, so its kernel must execute
 *   asm volatile("griddepcontrol.wait;" ::: "memory");
 * before it reads anything the earlier launches wrote (e.g. a split-K reduction reading partials).
 * On the FIRST launch the kernel before it is the application's (which may be writing A or B, or
 * reading C), so the wait must come before any global memory access, loads and stores alike, and
 * before any branch: put it first in the kernel. Everything before it (shared-memory setup,
 * barrier initialisation, index arithmetic, reading the argument struct) overlaps the previous
 * kernel's tail; in a CUDA graph of back-to-back calls that hides most of the launch gap.
 *
 * Semantics are cuBLAS's, column-major, for every batch index z < batch:
 *   C_z = alpha * op(A_z) * op(B_z) + beta * C_z   (+ bias[row] when the key's epilogue is bias)
 * with op by the key's ta/tb, A_z = a + z*stride_a elements (likewise B, C), element (i,j) of a
 * matrix X at X[i + j*ldX]. op(A) is m x k, op(B) is k x n, C is m x n. beta == 0 means C is not
 * read: it may hold NaN. The workspace, when the plan asks for one, is not zeroed between calls.
 *
 * This struct is ABI: its layout is fixed (static_asserts below and in the host code).
 */
#ifndef KDISPATCH_GEMM_CUH
#define KDISPATCH_GEMM_CUH

struct kd_gemm_args {
  const void* a;
  const void* b;
  void* c;
  void* workspace;
  long long m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c; /* in elements; 0 when batch == 1 */
  int batch;
  float alpha;
  float beta;
  const void* bias; /* epilogue=bias: m elements of C's type; otherwise null */
};

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(kd_gemm_args) == 128, "kd_gemm_args layout is ABI");
#endif

/* KD_GRID_DEPENDENCY_WAIT(): the wait a "pdl" launch owes the kernel before it (see above). */
#include "kdispatch/grid_dependency.cuh"

#endif /* KDISPATCH_GEMM_CUH */
