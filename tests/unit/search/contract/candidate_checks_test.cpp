// Static (pre-compile) contract checks.
#include "contract/candidate_checks.hpp"

#include <gtest/gtest.h>

#include "test_kernels.hpp"

namespace kd::search {
namespace {

CandidateStatus status_of(const std::string& source, const SourceLimits& limits = {}) {
  const auto checked = check_source(source, limits);
  if (const auto* rejection = std::get_if<Rejection>(&checked)) return rejection->status;
  return CandidateStatus::ok;
}

std::string message_of(const std::string& source) {
  const auto checked = check_source(source);
  const auto* rejection = std::get_if<Rejection>(&checked);
  return rejection ? rejection->message : std::string();
}

// `body` placed inside a contract-abiding source with a valid plan for kd_main.
std::string with(std::string_view body) {
  return "#include <kdispatch/gemm.cuh>\n" + test::plan_for("kd_main") + std::string(body) +
         "\nextern \"C\" __global__ void kd_main(kd_gemm_args args) {}\n";
}

TEST(CheckSource, GoodKernelReturnsItsPlan) {
  const auto checked = check_source(test::good_kernel("kd_axpy"));
  ASSERT_TRUE(std::holds_alternative<LaunchPlan>(checked)) << std::get<Rejection>(checked).message;
  const LaunchPlan& plan = std::get<LaunchPlan>(checked);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].entry, "kd_axpy");
  EXPECT_EQ(plan.launches[0].block[0], 256u);
}

TEST(CheckSource, TooLargeIsRejectedFirst) {
  EXPECT_EQ(status_of(test::good_kernel(), {.max_source_bytes = 64}), CandidateStatus::too_large);
  EXPECT_EQ(status_of(std::string(300 * 1024, ' ')), CandidateStatus::too_large);
}

TEST(CheckSource, NoPlanAndBadPlanAreDistinct) {
  EXPECT_EQ(status_of("extern \"C\" __global__ void kd_main(kd_gemm_args a) {}"), CandidateStatus::no_plan);
  EXPECT_EQ(status_of("// kdispatch:plan {\"launches\":[}\nextern \"C\" __global__ void kd_main(kd_gemm_args a) {}"),
            CandidateStatus::bad_plan);
  EXPECT_EQ(status_of(test::plan_for("kd_main", 2048) + "extern \"C\" __global__ void kd_main(kd_gemm_args a) {}"),
            CandidateStatus::bad_plan);
}

struct HostCase {
  const char* what;
  const char* body;
};

class HostCode : public ::testing::TestWithParam<HostCase> {};

TEST_P(HostCode, IsRejectedWithALine) {
  const std::string source = with(GetParam().body);
  EXPECT_EQ(status_of(source), CandidateStatus::host_code) << GetParam().what;
  EXPECT_NE(message_of(source).find("line "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostCode,
    ::testing::Values(HostCase{"main", "int main(int argc, char** argv) { return 0; }"},
                      HostCase{"iostream", "#include <iostream>"},
                      HostCase{"cstdio", "#include <cstdio>"},
                      HostCase{"quoted runtime header", "#include \"cuda_runtime.h\""},
                      HostCase{"thread", "#include <thread>"},
                      HostCase{"cudaMalloc", "void f(float** p) { cudaMalloc(p, 4); }"},
                      HostCase{"cudaMemcpy", "void f(void* d, void* s) { cudaMemcpy(d, s, 4, 1); }"},
                      HostCase{"driver call", "void f() { cuLaunchKernel(0); }"},
                      HostCase{"__host__", "__host__ void f() {}"},
                      HostCase{"launch", "void f() { kd_main<<<1, 1>>>(kd_gemm_args{}); }"}),
    [](const ::testing::TestParamInfo<HostCase>& p) { return std::to_string(p.index); });

class NotHostCode : public ::testing::TestWithParam<HostCase> {};

TEST_P(NotHostCode, Passes) {
  const auto checked = check_source(with(GetParam().body));
  EXPECT_TRUE(std::holds_alternative<LaunchPlan>(checked))
      << GetParam().what << ": " << std::get<Rejection>(checked).message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NotHostCode,
    ::testing::Values(HostCase{"main in a comment", "// int main() { return 0; }"},
                      HostCase{"include in a block comment", "/* #include <iostream>\n cudaMalloc(p, 4); */"},
                      HostCase{"runtime call in a string", "__device__ const char* s = \"cudaMalloc(p)\";"},
                      HostCase{"trap in asm", "__device__ void die() { asm volatile(\"trap;\"); }"},
                      HostCase{"host device function", "__host__ __device__ inline int cdiv(int a, int b) { return (a + b - 1) / b; }"},
                      HostCase{"host forceinline device", "__host__ __forceinline__ __device__ int one() { return 1; }"},
                      HostCase{"PDL device call", "__device__ void wait() { cudaGridDependencySynchronize(); }"},
                      HostCase{"device headers", "#include <cuda_bf16.h>\n#include <mma.h>\n#include <cuda/barrier>"},
                      HostCase{"shift", "__device__ int s(int a) { return a << 3 >> 1; }"},
                      HostCase{"member called main", "struct S { int main; };"}),
    [](const ::testing::TestParamInfo<HostCase>& p) { return std::to_string(p.index); });

TEST(CheckSource, PlanEntryThatIsNotDefinedIsMissing) {
  const std::string source = test::plan_for("kd_other") + "extern \"C\" __global__ void kd_main(kd_gemm_args a) {}";
  EXPECT_EQ(status_of(source), CandidateStatus::missing_entry);
  EXPECT_NE(message_of(source).find("kd_other"), std::string::npos);
}

TEST(CheckSource, PlanEntryOnlyCalledOrDeclaredAsDeviceIsMissing) {
  EXPECT_EQ(status_of(test::plan_for("kd_main") + "__device__ void kd_main(kd_gemm_args a) {}"),
            CandidateStatus::missing_entry);
}

TEST(CheckSource, GlobalWithoutExternCIsABadSignature) {
  EXPECT_EQ(status_of(test::plan_for("kd_main") + "__global__ void kd_main(kd_gemm_args a) {}"),
            CandidateStatus::bad_entry_signature);
}

TEST(CheckSource, ExternCBlocksAndLaunchBoundsAreAccepted) {
  EXPECT_EQ(status_of(test::plan_for("kd_main") +
                      "namespace n {}\nextern \"C\" {\n__global__ void __launch_bounds__(256, 1)\n"
                      "kd_main(kd_gemm_args a) {}\n}"),
            CandidateStatus::ok);
  EXPECT_EQ(status_of(test::plan_for("kd_main") +
                      "extern \"C\" __launch_bounds__(256) __global__ void kd_main(kd_gemm_args a) {}"),
            CandidateStatus::ok);
}

TEST(CheckSource, MacroMadeEntryIsLeftToThePtx) {
  EXPECT_EQ(status_of(test::plan_for("kd_main") +
                      "#define ENTRY(name) extern \"C\" __global__ void name(kd_gemm_args a) {}\nENTRY(kd_main)"),
            CandidateStatus::ok);
}

TEST(CandidateStatus, NamesAreStable) {
  EXPECT_EQ(to_string(CandidateStatus::ok), "ok");
  EXPECT_EQ(to_string(CandidateStatus::missing_entry), "missing_entry");
  EXPECT_EQ(to_string(CandidateStatus::compile_timeout), "compile_timeout");
  EXPECT_EQ(to_string(CandidateStatus::compiler_crash), "compiler_crash");
}

}  // namespace
}  // namespace kd::search
