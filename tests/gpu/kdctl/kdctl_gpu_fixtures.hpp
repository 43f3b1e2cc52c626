// What the kdctl GPU tests store, validate and prewarm: two f32 shapes (tests/gpu/eval's 512 x 256
// x 384 and a 256 x 256 x 384 one, ta=N tb=N, beta = 0) and two kernels behind a
// `// kdispatch:plan` line of [32, 8] blocks: a correct naive GEMM, one thread per output
// (tests/gpu/eval/kernels/naive_f32_nn.cu without batch and bias), and one that writes every
// output as zero (which the gate must fail). Row operators (issue 33): two f32 layernorm shapes, the
// gate's correct layernorm kernel (tests/gpu/eval/kernels/row_layernorm_f32.cu) and one that writes
// every output as zero.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/device.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"
#include "test_kernels.hpp"

namespace kd::test {

// A test that runs the real kdctl on a cache of its own (tmp_/cache) for device 0 (dev_): the
// derived test's SetUp requires the GPU, sets dev_ and stores the records it needs.
class KdctlCacheOnGpu : public ::testing::Test {
protected:
  std::filesystem::path cache() const { return tmp_.path() / "cache"; }
  // kdctl ARGS... --cache-dir <the cache>, run in the temporary directory.
  KdctlRun kdctl(std::vector<std::string> args) {
    args.insert(args.end(), {"--cache-dir", cache().string()});
    return run_kdctl(tmp_.path(), args);
  }
  // The shapes of the cache's records, sorted (kdctl ls --json).
  std::vector<std::string> stored_shapes() {
    std::vector<std::string> shapes;
    const KdctlRun r = kdctl({"ls", "--json"});
    EXPECT_EQ(r.rc, 0) << r.err;
    for (const auto& rec : nlohmann::json::parse(r.out)) shapes.push_back(rec.at("shape").get<std::string>());
    std::sort(shapes.begin(), shapes.end());
    return shapes;
  }

  TempDir tmp_;
  DeviceInfo dev_;
};

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

inline const std::string kRowShape256 = "layernorm dtype=f32 rows=256 cols=1024 weight=1 bias=1";
inline const std::string kRowShape128 = "layernorm dtype=f32 rows=128 cols=1024 weight=1 bias=1";

// The gate's correct f32 layernorm (tests/gpu/eval/kernels/row_layernorm_f32.cu: a block of 256
// threads per row, two passes, weight and bias when given), behind its own plan line.
inline std::string layernorm_f32_kernel() { return std::string(test_kernel("row_layernorm_f32")); }

// `plan_line`: a plan of [256, 1, 1] blocks, any grid (the kernel strides over rows by the grid).
inline std::string row_zeros_kernel(std::string_view plan_line) {
  return std::string(plan_line) + R"(
#include <kdispatch/rowop.cuh>
extern "C" __global__ void __launch_bounds__(256) kd_main(kd_row_args a) {
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x)
    for (long long c = threadIdx.x; c < a.cols; c += 256) static_cast<float*>(a.y)[r * a.cols + c] = 0.f;
}
)";
}

}  // namespace kd::test
