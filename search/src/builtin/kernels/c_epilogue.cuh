// The scalar C epilogue every builtin family shares: element conversions to and from float and
// out = alpha*sum (+ beta*C) (+ bias[row]) written to one element of column-major C.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "c_epilogue.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
// The includer defines first: KD_BETA_ZERO and KD_BIAS; kd_gemm_args comes from kdispatch/gemm.cuh.
#ifndef KD_C_EPILOGUE_CUH
#define KD_C_EPILOGUE_CUH

__device__ __forceinline__ float kd_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float kd_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float kd_to_float(float v) { return v; }
__device__ __forceinline__ void kd_store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void kd_store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void kd_store(float* p, float v) { *p = v; }

// Finishes C's element at dst (in `row`) from out = alpha*sum: adds beta * *dst (unless
// KD_BETA_ZERO) and bias[row] (KD_BIAS), and stores it. The caller has checked the bounds.
template <typename T>
__device__ __forceinline__ void kd_finish_c(const kd_gemm_args& args, T* dst, long long row, float out) {
#if !KD_BETA_ZERO
  out += args.beta * kd_to_float(*dst);
#endif
#if KD_BIAS
  out += kd_to_float(static_cast<const T*>(args.bias)[row]);
#endif
  kd_store(dst, out);
}

// C[row, col] = alpha*sum (+ beta*C[row, col]) (+ bias[row]); rows and columns past the matrix are
// dropped.
template <typename T>
__device__ __forceinline__ void kd_epilogue(const kd_gemm_args& args, T* C, long long row, long long col,
                                            float sum) {
  if (row >= args.m || col >= args.n) return;
  float out = args.alpha * sum;
  T* dst = C + row + col * args.ldc;
  kd_finish_c(args, dst, row, out);
}

#endif  // KD_C_EPILOGUE_CUH
