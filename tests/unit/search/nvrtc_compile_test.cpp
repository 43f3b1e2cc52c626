#include "compile/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

namespace kd::search {
namespace {

constexpr const char* kAxpy = R"(
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// kdispatch:plan {"launches":[{"entry":"kd_axpy","grid":[4,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
extern "C" __global__ void kd_axpy(kd_gemm_args args) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.m) {
    const float* x = static_cast<const float*>(args.a);
    const float* y = static_cast<const float*>(args.b);
    static_cast<float*>(args.c)[i] = args.alpha * x[i] + y[i];
  }
}
)";

bool is_elf(const std::string& bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

TEST(NvrtcCompile, GoodKernelGivesCubinAndPtxForSm90) {
  const CompileOutput out = compile_cuda({.source = kAxpy, .name = "axpy.cu", .arch = "sm_90"});
  ASSERT_EQ(out.status, CompileStatus::ok) << out.log;
  EXPECT_TRUE(is_elf(out.cubin));
  EXPECT_NE(out.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(out.ptx.find("kd_axpy"), std::string::npos);
}

TEST(NvrtcCompile, BrokenKernelIsAValueWithTheLog) {
  const CompileOutput out =
      compile_cuda({.source = "extern \"C\" __global__ void k(kd_gemm_args a) { undeclared_x = 1; }",
                    .name = "broken.cu", .arch = "sm_90"});
  EXPECT_EQ(out.status, CompileStatus::compile_error);
  EXPECT_TRUE(out.cubin.empty());
  EXPECT_NE(out.log.find("broken.cu"), std::string::npos) << out.log;
}

TEST(NvrtcCompile, VersionIsReported) { EXPECT_FALSE(nvrtc_version().empty()); }

}  // namespace
}  // namespace kd::search
