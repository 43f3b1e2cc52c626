// A plain f32 row operator for the gate's row tests: a block of 256 threads per row, two passes
// (the mean, then the centred sum of squares), weight and bias when given. Test kernels set ROW_OP
// (0 rmsnorm, 1 layernorm, 2 softmax) and, to break one rule each, ROW_SKIP_LAST (leave the last row
// unwritten), ROW_EXTRA (write one row past the end), ROW_SINGLE_PASS (layernorm's variance as
// E[x^2] - E[x]^2, clamped at 0) or ROW_WRITE_INPUT (store into x).
#include <kdispatch/rowop.cuh>

#ifndef ROW_SKIP_LAST
#define ROW_SKIP_LAST 0
#endif
#ifndef ROW_EXTRA
#define ROW_EXTRA 0
#endif
#ifndef ROW_SINGLE_PASS
#define ROW_SINGLE_PASS 0
#endif
#ifndef ROW_WRITE_INPUT
#define ROW_WRITE_INPUT 0
#endif

__device__ float row_block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.f;
  for (int i = 0; i < 8; ++i) t += sh[i];
  return t;
}
__device__ float row_block_max(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = sh[0];
  for (int i = 1; i < 8; ++i) t = fmaxf(t, sh[i]);
  return t;
}

extern "C" __global__ void __launch_bounds__(256) kd_main(kd_row_args a) {
  __shared__ float sh[8];
  const float* x = (const float*)a.x;
  const float* w = (const float*)a.weight;
  const float* b = (const float*)a.bias;
  float* y = (float*)a.y;
  const long long rows = a.rows - ROW_SKIP_LAST + ROW_EXTRA;
  const float n = (float)a.cols;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * a.cols;
    float* yr = y + r * a.cols;
    float shift = 0.f, scale = 1.f;
    if (ROW_OP == 2) {
      float m = -__int_as_float(0x7f800000);
      for (long long c = threadIdx.x; c < a.cols; c += 256) m = fmaxf(m, xr[c]);
      shift = row_block_max(m, sh);
      float s = 0.f;
      for (long long c = threadIdx.x; c < a.cols; c += 256) s += expf(xr[c] - shift);
      scale = 1.f / row_block_sum(s, sh);
    } else if (ROW_OP == 0) {
      float s = 0.f;
      for (long long c = threadIdx.x; c < a.cols; c += 256) s += xr[c] * xr[c];
      scale = rsqrtf(row_block_sum(s, sh) / n + a.eps);
    } else if (ROW_SINGLE_PASS) {
      float s = 0.f, q = 0.f;
      for (long long c = threadIdx.x; c < a.cols; c += 256) { s += xr[c]; q += xr[c] * xr[c]; }
      shift = row_block_sum(s, sh) / n;
      const float var = fmaxf(row_block_sum(q, sh) / n - shift * shift, 0.f);
      scale = rsqrtf(var + a.eps);
    } else {
      float s = 0.f;
      for (long long c = threadIdx.x; c < a.cols; c += 256) s += xr[c];
      shift = row_block_sum(s, sh) / n;
      float q = 0.f;
      for (long long c = threadIdx.x; c < a.cols; c += 256) q += (xr[c] - shift) * (xr[c] - shift);
      scale = rsqrtf(row_block_sum(q, sh) / n + a.eps);
    }
    for (long long c = threadIdx.x; c < a.cols; c += 256) {
      float v = ROW_OP == 2 ? expf(xr[c] - shift) * scale : (xr[c] - shift) * scale;
      if (ROW_OP != 2 && w != nullptr) v *= w[c];
      if (ROW_OP == 1 && b != nullptr) v += b[c];
      yr[c] = v;
    }
    __syncthreads();
  }
  if (ROW_WRITE_INPUT && blockIdx.x == 0 && threadIdx.x == 0) ((float*)a.x)[0] = 0.f;
}
