#include "compile/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_kernels.hpp"

namespace kd::search {
namespace {

bool is_elf(const std::string& bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

TEST(NvrtcCompile, GoodKernelGivesCubinAndPtxForSm90) {
  const CompileOutput out = compile_cuda({.source = test::good_kernel(), .name = "axpy.cu", .arch = "sm_90"});
  ASSERT_EQ(out.status, CompileStatus::ok) << out.log;
  EXPECT_TRUE(is_elf(out.cubin));
  EXPECT_NE(out.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(out.ptx.find(".entry kd_axpy("), std::string::npos);
  EXPECT_NE(out.ptx.find(".loc"), std::string::npos) << "-lineinfo missing";
  EXPECT_GT(out.compile_time.count(), 0);
}

TEST(NvrtcCompile, BrokenKernelIsAValueWithTheLog) {
  const CompileOutput out =
      compile_cuda({.source = "extern \"C\" __global__ void k(kd_gemm_args a) { undeclared_x = 1; }",
                    .name = "broken.cu", .arch = "sm_90"});
  EXPECT_EQ(out.status, CompileStatus::compile_error);
  EXPECT_TRUE(out.cubin.empty());
  EXPECT_NE(out.log.find("broken.cu"), std::string::npos) << out.log;
}

TEST(NvrtcCompile, OptionsAreExactArchLineinfoAndCallerExtras) {
  const std::vector<std::string> options =
      compile_options({.arch = "sm_90", .extra_options = {"--use_fast_math"}});
  const auto has = [&](std::string_view o) { return std::find(options.begin(), options.end(), o) != options.end(); };
  EXPECT_TRUE(has("--gpu-architecture=sm_90a"));  // the exact GPU's arch-specific features (wgmma)
  EXPECT_TRUE(has("--std=c++17"));
  EXPECT_TRUE(has("-default-device"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_EQ(options.back(), "--use_fast_math");
}

// Headers tensor-core kernels need; NVRTC 13 carries none of them built in.
TEST(NvrtcCompile, HalfBf16MmaAndPipelineHeadersResolve) {
  const CompileOutput out = compile_cuda({.source = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cuda_pipeline.h>
extern "C" __global__ void k(__nv_bfloat16* b, __half* h) {
  b[threadIdx.x] = __float2bfloat16(__half2float(h[threadIdx.x]) * 2.0f);
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  nvcuda::wmma::fill_fragment(acc, 0.0f);
  __pipeline_commit();
}
)",
                                          .name = "headers.cu"});
  EXPECT_EQ(out.status, CompileStatus::ok) << out.log;
}

TEST(NvrtcCompile, CcclBarrierResolves) {
  const CompileOutput out = compile_cuda({.source = R"(
#include <cuda/barrier>
extern "C" __global__ void k(int* p) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  bar.arrive_and_wait();
  p[threadIdx.x] = 1;
}
)",
                                          .name = "barrier.cu"});
  EXPECT_EQ(out.status, CompileStatus::ok) << out.log;
}

TEST(NvrtcCompile, VersionIsReported) { EXPECT_FALSE(nvrtc_version().empty()); }

}  // namespace
}  // namespace kd::search
