// Candidate sources shared by the compile tests.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kd::search::test {

// A plan comment for one launch of `entry` with `block` threads and `smem` dynamic bytes.
inline std::string plan_for(std::string_view entry, unsigned block = 256, unsigned smem = 0) {
  return fmt::format(
      "// kdispatch:plan {{\"launches\":[{{\"entry\":\"{}\",\"grid\":[4,1,1],\"block\":[{},1,1],"
      "\"smem\":{}}}],\"workspace\":0}}\n",
      entry, block, smem);
}

// A contract-abiding axpy-like kernel; `scale` makes distinct sources.
inline std::string good_kernel(std::string_view entry = "kd_axpy", int scale = 1) {
  return "#include <kdispatch/gemm.cuh>\n" + plan_for(entry) +
         fmt::format(R"(extern "C" __global__ void {}(kd_gemm_args args) {{
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.m) {{
    const float* x = static_cast<const float*>(args.a);
    const float* y = static_cast<const float*>(args.b);
    static_cast<float*>(args.c)[i] = {} * args.alpha * x[i] + y[i];
  }}
}}
)",
                     entry, scale);
}

}  // namespace kd::search::test
