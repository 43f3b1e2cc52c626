#include "test_kernels.hpp"

#include <fmt/format.h>

namespace kd::llm::test {

std::string good_kernel(std::string_view entry, int scale) {
  return fmt::format(R"(#include <kdispatch/gemm.cuh>
// kdispatch:plan {{"launches":[{{"entry":"{0}","grid":[16,1,1],"block":[256,1,1],"smem":0}}],"workspace":0}}
extern "C" __global__ void {0}(kd_gemm_args args) {{
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.m) {{
    const float* x = static_cast<const float*>(args.a);
    static_cast<float*>(args.c)[i] = {1} * args.alpha * x[i];
  }}
}}
)",
                     entry, scale);
}

std::string host_code_kernel() {
  return R"(#include <kdispatch/gemm.cuh>
#include <cstdio>
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
extern "C" __global__ void kd_main(kd_gemm_args args) {}
int main() { void* p; cudaMalloc(&p, 16); return 0; }
)";
}

std::string planless_kernel() {
  return R"(#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_main(kd_gemm_args args) {}
)";
}

namespace {

std::string_view element_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f32: return "float";
  }
  return "float";
}

// The includes, the element type and its f32 conversions every row kernel here starts with.
std::string row_prelude(DType dtype) {
  return fmt::format(R"(#include <kdispatch/rowop.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef {} elem_t;
__device__ __forceinline__ float to_f32(float v) {{ return v; }}
__device__ __forceinline__ float to_f32(__half v) {{ return __half2float(v); }}
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) {{ return __bfloat162float(v); }}
__device__ __forceinline__ void store(float* p, float v) {{ *p = v; }}
__device__ __forceinline__ void store(__half* p, float v) {{ *p = __float2half_rn(v); }}
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) {{ *p = __float2bfloat16_rn(v); }}
)",
                     element_type(dtype));
}

}  // namespace

std::string row_kernel(RowOp op, DType dtype, std::string_view entry, int grid) {
  return row_prelude(dtype) + fmt::format(R"(// kdispatch:plan {{"launches":[{{"entry":"{0}","grid":[{1},1,1],"block":[256,1,1],"smem":0,"pdl":true}}],"workspace":0}}
#define ROW_OP {2}

// The sum (or the max) over the block's 256 threads, returned to every thread.
__device__ float block_reduce(float v, bool take_max, float* sh) {{
  for (int o = 16; o > 0; o >>= 1) {{
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = take_max ? fmaxf(v, u) : v + u;
  }}
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = sh[0];
  for (int i = 1; i < 8; ++i) t = take_max ? fmaxf(t, sh[i]) : t + sh[i];
  return t;
}}

extern "C" __global__ void __launch_bounds__(256) {0}(kd_row_args a) {{
  KD_GRID_DEPENDENCY_WAIT();
  __shared__ float sh[8];
  const elem_t* x = static_cast<const elem_t*>(a.x);
  const elem_t* w = static_cast<const elem_t*>(a.weight);
  const elem_t* b = static_cast<const elem_t*>(a.bias);
  elem_t* y = static_cast<elem_t*>(a.y);
  const float n = (float)a.cols;
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {{
    const elem_t* xr = x + r * a.cols;
    elem_t* yr = y + r * a.cols;
    float shift = 0.f, scale = 1.f;
#if ROW_OP == 2
    float m = -__int_as_float(0x7f800000);
    for (long long c = threadIdx.x; c < a.cols; c += 256) m = fmaxf(m, to_f32(xr[c]));
    shift = block_reduce(m, true, sh);
    float s = 0.f;
    for (long long c = threadIdx.x; c < a.cols; c += 256) s += expf(to_f32(xr[c]) - shift);
    scale = 1.f / block_reduce(s, false, sh);
#elif ROW_OP == 0
    float s = 0.f;
    for (long long c = threadIdx.x; c < a.cols; c += 256) {{ const float v = to_f32(xr[c]); s += v * v; }}
    scale = rsqrtf(block_reduce(s, false, sh) / n + a.eps);
#else
    float s = 0.f;
    for (long long c = threadIdx.x; c < a.cols; c += 256) s += to_f32(xr[c]);
    shift = block_reduce(s, false, sh) / n;
    float q = 0.f;
    for (long long c = threadIdx.x; c < a.cols; c += 256) {{ const float d = to_f32(xr[c]) - shift; q += d * d; }}
    scale = rsqrtf(block_reduce(q, false, sh) / n + a.eps);
#endif
    for (long long c = threadIdx.x; c < a.cols; c += 256) {{
#if ROW_OP == 2
      const float v = expf(to_f32(xr[c]) - shift) * scale;
#else
      float v = (to_f32(xr[c]) - shift) * scale;
      if (w != nullptr) v *= to_f32(w[c]);
      if (ROW_OP == 1 && b != nullptr) v += to_f32(b[c]);
#endif
      store(yr + c, v);
    }}
    __syncthreads();  // sh is reused by the next row's reductions
  }}
}}
)",
                                          entry, grid, op == RowOp::rmsnorm ? 0 : op == RowOp::layernorm ? 1 : 2);
}

std::string zero_row_kernel(DType dtype, std::string_view entry) {
  return row_prelude(dtype) + fmt::format(R"(// kdispatch:plan {{"launches":[{{"entry":"{0}","grid":[512,1,1],"block":[256,1,1],"smem":0}}],"workspace":0}}
extern "C" __global__ void {0}(kd_row_args a) {{
  elem_t* y = static_cast<elem_t*>(a.y);
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < a.rows * a.cols; i += gridDim.x * 256ll) store(y + i, 0.f);
}}
)",
                                          entry);
}

std::string fenced(std::string_view source, std::string_view language) {
  return fmt::format("```{}\n{}```\n", language, source);
}

}  // namespace kd::llm::test
