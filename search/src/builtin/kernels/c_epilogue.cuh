// The scalar C epilogue every builtin family shares: element conversions to and from float and
// out = alpha*sum (+ beta*C) (+ bias[row]) written to one element of column-major C.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "c_epilogue.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
// The includer defines first: KD_BETA_ZERO and KD_BIAS; kd_gemm_args comes from kdispatch/gemm.cuh.
// Optionally KD_UNLEAN, a constant expression: when true, the sum is first raised by kd_tc_lean of
// itself, taking back the lean toward zero of strict-f32 sums built on tensor-core accumulation;
// KD_TC_LEAN (a float literal) replaces the measured mean of wg_tiled's sums for a kernel whose
// promotion spans a different number of truncating steps.
#ifndef KD_C_EPILOGUE_CUH
#define KD_C_EPILOGUE_CUH

__device__ __forceinline__ float kd_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float kd_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float kd_to_float(float v) { return v; }
__device__ __forceinline__ void kd_store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void kd_store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void kd_store(float* p, float v) { *p = v; }

// Finishes C's element at dst from out = alpha*sum: adds beta * *dst (unless KD_BETA_ZERO) and
// `bias`, its row's bias (KD_BIAS; read by the caller), and stores it. The caller has checked the
// bounds.
template <typename T>
__device__ __forceinline__ void kd_finish_c_biased(const kd_gemm_args& args, T* dst, float out, float bias) {
#if !KD_BETA_ZERO
  out += args.beta * kd_to_float(*dst);
#endif
#if KD_BIAS
  out += bias;
#endif
  kd_store(dst, out);
}
// The row's bias (KD_BIAS) as kd_finish_c_biased adds it.
template <typename T>
__device__ __forceinline__ float kd_bias_of(const kd_gemm_args& args, long long row) {
#if KD_BIAS
  return kd_to_float(static_cast<const T*>(args.bias)[row]);
#else
  return 0.f;
#endif
}
// kd_finish_c_biased with bias[row] read here. Read per output, after the stores before it (which
// might alias it as far as the compiler knows); a kernel that holds its rows' biases passes them.
template <typename T>
__device__ __forceinline__ void kd_finish_c(const kd_gemm_args& args, T* dst, long long row, float out) {
  kd_finish_c_biased(args, dst, out, kd_bias_of<T>(args, row));
}

// The value kd_finish_c finishes: alpha * sum (the sum first raised by KD_UNLEAN's lean).
__device__ __forceinline__ float kd_epilogue_value(const kd_gemm_args& args, float sum) {
#ifdef KD_UNLEAN
  // The tensor cores' f32 accumulation truncates each chained sum toward zero; over a GEMM that
  // leaves the outputs 0.6-1.7 units of 2^-24 smaller in magnitude on average, by the inputs'
  // distribution and whatever k, layout or split (the gate's lean of wg_tiled's 3xTF32 and f16
  // splits on an H100: -3.8e-8 to -5.5e-8 for zero-mean inputs, -7.4e-8 to -1.0e-7 for inputs with
  // an offset mean; cuBLAS's: +-5e-9). One FMA per output takes back the middle of that range,
  // leaving at most 3.1e-8 either way (docs/kernel-notes.md, session 22).
#ifndef KD_TC_LEAN
#define KD_TC_LEAN 6.9e-8f
#endif
  constexpr float kd_tc_lean = KD_TC_LEAN;
  if constexpr (KD_UNLEAN) sum = fmaf(sum, kd_tc_lean, sum);
#endif
  return args.alpha * sum;
}

// C[row, col] = alpha*sum (+ beta*C[row, col]) (+ bias[row]); rows and columns past the matrix are
// dropped.
template <typename T>
__device__ __forceinline__ void kd_epilogue(const kd_gemm_args& args, T* C, long long row, long long col,
                                            float sum) {
  if (row >= args.m || col >= args.n) return;
  float out = kd_epilogue_value(args, sum);
  T* dst = C + row + col * args.ldc;
  kd_finish_c(args, dst, row, out);
}
// kd_epilogue with the row's bias (kd_bias_of) read by the caller.
template <typename T>
__device__ __forceinline__ void kd_epilogue_biased(const kd_gemm_args& args, T* C, long long row, long long col,
                                                   float sum, float bias) {
  if (row >= args.m || col >= args.n) return;
  kd_finish_c_biased(args, C + row + col * args.ldc, kd_epilogue_value(args, sum), bias);
}

#endif  // KD_C_EPILOGUE_CUH
