// The first GPU test: an NVRTC-compiled cubin loaded with the Driver API, launched with the
// kd_gemm_args contract struct, every output element checked.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "kdispatch/gemm.cuh"
#include "support/gpu.hpp"

namespace kd {
namespace {

constexpr const char* kAxpy = R"(
#include <kdispatch/gemm.cuh>
extern "C" __global__ void kd_axpy(kd_gemm_args args) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.m) {
    const float* x = static_cast<const float*>(args.a);
    const float* y = static_cast<const float*>(args.b);
    static_cast<float*>(args.c)[i] = args.alpha * x[i] + y[i];
  }
}
)";

TEST(GpuLaunch, NvrtcCubinRunsAndWritesEveryElement) {
  KD_REQUIRE_GPU();
  const CudaDriver& d = cu();
  const DeviceInfo dev = query_device(0);
  const search::CompileOutput out =
      search::compile_cuda({.source = kAxpy, .name = "axpy.cu", .arch = dev.arch});
  ASSERT_EQ(out.status, search::CompileStatus::ok) << out.log;

  CUmodule module = nullptr;
  KD_CU_CHECK(d.cuModuleLoadData(&module, out.cubin.data()), "axpy cubin");
  CUfunction fn = nullptr;
  KD_CU_CHECK(d.cuModuleGetFunction(&fn, module, "kd_axpy"), "kd_axpy");

  constexpr int n = 1 << 20;
  std::vector<float> x(n), y(n), result(n);
  std::mt19937 rng(42);
  std::normal_distribution<float> dist;
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  CUdeviceptr dx = 0, dy = 0, dz = 0;
  const size_t bytes = n * sizeof(float);
  KD_CU_CHECK(d.cuMemAlloc(&dx, bytes), "x");
  KD_CU_CHECK(d.cuMemAlloc(&dy, bytes), "y");
  KD_CU_CHECK(d.cuMemAlloc(&dz, bytes), "z");
  KD_CU_CHECK(d.cuMemcpyHtoD(dx, x.data(), bytes), "x");
  KD_CU_CHECK(d.cuMemcpyHtoD(dy, y.data(), bytes), "y");
  KD_CU_CHECK(d.cuMemsetD32(dz, 0x7fc00000u, n), "z poison");  // NaN: unwritten shows

  kd_gemm_args args{};
  args.a = reinterpret_cast<const void*>(dx);
  args.b = reinterpret_cast<const void*>(dy);
  args.c = reinterpret_cast<void*>(dz);
  args.m = n;
  args.alpha = 2.5f;
  void* params[] = {&args};
  KD_CU_CHECK(d.cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
              "kd_axpy");
  KD_CU_CHECK(d.cuCtxSynchronize(), "kd_axpy");
  KD_CU_CHECK(d.cuMemcpyDtoH(result.data(), dz, bytes), "z");

  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const float expect = 2.5f * x[i] + y[i];
    if (!(std::fabs(result[i] - expect) <= 1e-6f * (1.0f + std::fabs(expect)))) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "of " << n << " elements";
  std::printf("launched kd_axpy on %s (%s, %d SMs): %d elements checked, %d wrong\n",
              dev.name.c_str(), dev.arch.c_str(), dev.sms, n, wrong);
  d.cuMemFree(dx);
  d.cuMemFree(dy);
  d.cuMemFree(dz);
  d.cuModuleUnload(module);
}

}  // namespace
}  // namespace kd
