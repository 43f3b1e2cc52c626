// Post-compile contract checks on real NVRTC output: one module with well- and ill-formed kernels.
#include <gtest/gtest.h>

#include "compile/nvrtc_compiler.hpp"
#include "contract/candidate_checks.hpp"
#include "contract/cubin_resources.hpp"

namespace kd::search {
namespace {

constexpr const char* kModule = R"(
#include <kdispatch/gemm.cuh>
#include <kdispatch/rowop.cuh>
extern "C" __global__ void good(kd_gemm_args a) { static_cast<float*>(a.c)[threadIdx.x] = a.alpha; }
extern "C" __global__ void row_entry(kd_row_args a) { static_cast<float*>(a.y)[threadIdx.x] = a.eps; }
extern "C" __global__ void two_params(kd_gemm_args a, int x) { static_cast<int*>(a.c)[0] = x; }
extern "C" __global__ void int_param(int x) {}
__global__ void not_extern_c(kd_gemm_args a) {}
extern "C" __global__ void __launch_bounds__(128) bounded(kd_gemm_args a) {}
extern "C" __global__ void waits(kd_gemm_args a) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  static_cast<float*>(a.c)[threadIdx.x] = a.alpha;
}
extern "C" __global__ void reads_then_waits(kd_gemm_args a) {
  const float x = static_cast<const float*>(a.a)[threadIdx.x];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  static_cast<float*>(a.c)[threadIdx.x] = x;
}
extern "C" __global__ void waits_in_a_branch(kd_gemm_args a) {
  if (threadIdx.x < a.m) asm volatile("griddepcontrol.wait;" ::: "memory");
  static_cast<float*>(a.c)[threadIdx.x] = a.alpha;
}
extern "C" __global__ void waits_after_setup(kd_gemm_args a) {
  __shared__ float stage[256];
  stage[threadIdx.x] = a.alpha * threadIdx.x;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  __syncthreads();
  static_cast<float*>(a.c)[threadIdx.x] = stage[255 - threadIdx.x] + static_cast<const float*>(a.a)[0];
}
extern "C" __global__ void shared_40k(kd_gemm_args a) {
  __shared__ float tile[10240];
  tile[threadIdx.x] = a.alpha;
  __syncthreads();
  static_cast<float*>(a.c)[threadIdx.x] = tile[(threadIdx.x + 1) % 10240];
}
)";

class CompiledChecks : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    out_ = new CompileOutput(compile_cuda({.source = kModule, .name = "module.cu", .arch = "sm_90"}));
  }
  static void TearDownTestSuite() { delete out_; }

  static std::optional<Rejection> check(const std::string& entry, unsigned block = 256, unsigned smem = 0) {
    LaunchPlan plan;
    plan.launches.push_back({.entry = entry, .grid = {1, 1, 1}, .block = {block, 1, 1}, .smem_bytes = smem});
    EXPECT_EQ(out_->status, CompileStatus::ok) << out_->log;
    return check_compiled(plan, out_->ptx, out_->cubin, "sm_90");
  }
  static CandidateStatus status(const std::string& entry, unsigned block = 256, unsigned smem = 0) {
    const auto rejection = check(entry, block, smem);
    return rejection ? rejection->status : CandidateStatus::ok;
  }

  static inline CompileOutput* out_ = nullptr;
};

TEST_F(CompiledChecks, ContractEntryPasses) { EXPECT_EQ(status("good"), CandidateStatus::ok); }

TEST_F(CompiledChecks, EntryNotInPtxIsMissing) {
  EXPECT_EQ(status("absent"), CandidateStatus::missing_entry);
}

TEST_F(CompiledChecks, WrongParametersAreABadSignature) {
  EXPECT_EQ(status("two_params"), CandidateStatus::bad_entry_signature);
  EXPECT_EQ(status("int_param"), CandidateStatus::bad_entry_signature);
  EXPECT_NE(check("int_param")->message.find(".u32"), std::string::npos) << check("int_param")->message;
}

// Each operator's entries take its own argument struct: kd_row_args (64 bytes) for a row key, and
// a kernel of the other operator's struct is refused by name.
TEST_F(CompiledChecks, EntriesTakeTheirOperatorsArgumentStruct) {
  LaunchPlan plan;
  plan.launches.push_back({.entry = "row_entry", .grid = {1, 1, 1}, .block = {256, 1, 1}, .smem_bytes = 0});
  EXPECT_FALSE(check_compiled(plan, out_->ptx, out_->cubin, "sm_90", CompileRequest::kRowArgsBytes));
  const auto as_gemm = check_compiled(plan, out_->ptx, out_->cubin, "sm_90");
  ASSERT_TRUE(as_gemm);
  EXPECT_EQ(as_gemm->status, CandidateStatus::bad_entry_signature);
  EXPECT_NE(as_gemm->message.find("kd_gemm_args"), std::string::npos) << as_gemm->message;
  plan.launches.front().entry = "good";
  const auto gemm_as_row = check_compiled(plan, out_->ptx, out_->cubin, "sm_90", CompileRequest::kRowArgsBytes);
  ASSERT_TRUE(gemm_as_row);
  EXPECT_NE(gemm_as_row->message.find("kd_row_args"), std::string::npos) << gemm_as_row->message;
}

TEST_F(CompiledChecks, MangledEntryIsNotExternC) {
  const auto rejection = check("not_extern_c");
  ASSERT_TRUE(rejection);
  EXPECT_EQ(rejection->status, CandidateStatus::bad_entry_signature);
  EXPECT_NE(rejection->message.find("extern"), std::string::npos);
}

TEST_F(CompiledChecks, BlockOverLaunchBoundsIsRejected) {
  EXPECT_EQ(status("bounded", 128), CandidateStatus::ok);
  EXPECT_EQ(status("bounded", 256), CandidateStatus::plan_exceeds_launch_bounds);
}

// A programmatic dependent launch must wait for the launch before it; "good" never does.
TEST_F(CompiledChecks, ProgrammaticDependentEntryMustWaitOnTheGrid) {
  const auto with = [](const char* second) {
    LaunchPlan plan;
    plan.launches.push_back({.entry = "good", .grid = {1, 1, 1}, .block = {32, 1, 1}});
    plan.launches.push_back({.entry = second, .grid = {1, 1, 1}, .block = {32, 1, 1}, .pdl = true});
    return check_compiled(plan, out_->ptx, out_->cubin, "sm_90");
  };
  EXPECT_FALSE(with("waits"));
  const auto rejection = with("good");
  ASSERT_TRUE(rejection);
  EXPECT_EQ(rejection->status, CandidateStatus::bad_plan);
  EXPECT_NE(rejection->message.find("griddepcontrol.wait"), std::string::npos) << rejection->message;
}

// A first launch depends on the application's kernel, so the wait must precede every global
// access and branch; shared-memory setup and reading the argument struct may come before it.
TEST_F(CompiledChecks, ProgrammaticDependentFirstLaunchMustWaitBeforeAnyGlobalAccess) {
  const auto first = [](const char* entry) {
    LaunchPlan plan;
    plan.launches.push_back({.entry = entry, .grid = {1, 1, 1}, .block = {256, 1, 1}, .pdl = true});
    return check_compiled(plan, out_->ptx, out_->cubin, "sm_90");
  };
  EXPECT_FALSE(first("waits"));
  EXPECT_FALSE(first("waits_after_setup"));
  for (const char* bad : {"good", "reads_then_waits", "waits_in_a_branch"}) {
    const auto rejection = first(bad);
    ASSERT_TRUE(rejection) << bad;
    EXPECT_EQ(rejection->status, CandidateStatus::bad_plan) << bad;
    EXPECT_NE(rejection->message.find("first launch"), std::string::npos) << rejection->message;
  }
  // After the first launch only the existence of the wait is required.
  LaunchPlan later;
  later.launches.push_back({.entry = "good", .grid = {1, 1, 1}, .block = {32, 1, 1}});
  later.launches.push_back({.entry = "reads_then_waits", .grid = {1, 1, 1}, .block = {32, 1, 1}, .pdl = true});
  EXPECT_FALSE(check_compiled(later, out_->ptx, out_->cubin, "sm_90"));
}

TEST_F(CompiledChecks, StaticPlusDynamicSharedMemoryIsBounded) {
  const auto shared = cubin_static_shared_bytes(out_->cubin);
  ASSERT_TRUE(shared);
  ASSERT_TRUE(shared->contains("shared_40k"));
  EXPECT_GE(shared->at("shared_40k"), 40960u);
  EXPECT_FALSE(shared->contains("good"));
  EXPECT_EQ(status("shared_40k", 256, 180 * 1024), CandidateStatus::ok);   // 220 KiB of 227
  EXPECT_EQ(status("shared_40k", 256, 200 * 1024), CandidateStatus::shared_memory_over_limit);
  EXPECT_EQ(status("good", 256, 227 * 1024), CandidateStatus::ok);
}

TEST(CubinResources, NotAnElfIsNullopt) {
  EXPECT_FALSE(cubin_static_shared_bytes("not an elf image"));
  EXPECT_FALSE(cubin_static_shared_bytes(""));
}

}  // namespace
}  // namespace kd::search
