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

std::string fenced(std::string_view source, std::string_view language) {
  return fmt::format("```{}\n{}```\n", language, source);
}

}  // namespace kd::llm::test
