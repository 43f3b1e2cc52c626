#include "compile/compile_service.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/temp_dir.hpp"
#include "test_kernels.hpp"

namespace kd::search {
namespace {

using namespace std::chrono_literals;

const std::string kContract = "#include <kdispatch/gemm.cuh>\n";

CompileRequest request(std::string source, std::string name = "candidate.cu") {
  return {.source = std::move(source), .name = std::move(name), .arch = "sm_90"};
}

TEST(CompileService, GoodKernelCompilesWithPlanAndPassesTheContract) {
  CompileService service({.threads = 1});
  const CandidateBuild build = service.compile(request(test::good_kernel("kd_axpy")));
  ASSERT_EQ(build.status, CandidateStatus::ok) << build.message << "\n" << build.log;
  EXPECT_TRUE(build.message.empty());
  EXPECT_EQ(build.cubin.compare(0, 4, "\x7f" "ELF"), 0);
  EXPECT_NE(build.ptx.find(".entry kd_axpy("), std::string::npos);
  ASSERT_TRUE(build.plan);
  EXPECT_EQ(build.plan->launches.at(0).entry, "kd_axpy");
  EXPECT_GT(build.compile_time.count(), 0);
  EXPECT_EQ(build.cache_key.size(), 32u);
  EXPECT_EQ(build.cache, CacheSource::none);
  EXPECT_EQ(service.compiles_started(), 1u);
}

TEST(CompileService, BrokenKernelIsACompileErrorWithTheLog) {
  CompileService service({.threads = 1});
  const CandidateBuild build = service.compile(request(
      kContract + test::plan_for("kd_main") +
          "extern \"C\" __global__ void kd_main(kd_gemm_args a) { undeclared_x = 1; }",
      "broken.cu"));
  EXPECT_EQ(build.status, CandidateStatus::compile_error);
  EXPECT_NE(build.log.find("undeclared_x"), std::string::npos) << build.log;
  EXPECT_NE(build.message.find("error"), std::string::npos) << build.message;
  EXPECT_TRUE(build.cubin.empty());
}

TEST(CompileService, StaticRejectionsNeverStartTheCompiler) {
  CompileService service({.threads = 1});
  EXPECT_EQ(service.compile(request("extern \"C\" __global__ void k(kd_gemm_args a) {}")).status,
            CandidateStatus::no_plan);
  EXPECT_EQ(service.compile(request(test::good_kernel() + "int main() { return 0; }")).status,
            CandidateStatus::host_code);
  EXPECT_EQ(service.compile(request(test::good_kernel() + std::string(300 * 1024, '\n'))).status,
            CandidateStatus::too_large);
  EXPECT_EQ(service.compile(request(test::plan_for("kd_absent") +
                                    "extern \"C\" __global__ void kd_main(kd_gemm_args a) {}"))
                .status,
            CandidateStatus::missing_entry);
  EXPECT_EQ(service.compiles_started(), 0u);
}

TEST(CompileService, WrongSignatureIsFoundInThePtx) {
  CompileService service({.threads = 1});
  const CandidateBuild two = service.compile(request(
      kContract + test::plan_for("kd_main") + "extern \"C\" __global__ void kd_main(kd_gemm_args a, int x) {}"));
  EXPECT_EQ(two.status, CandidateStatus::bad_entry_signature) << two.message << two.log;
  const CandidateBuild int_param =
      service.compile(request(test::plan_for("kd_main") + "extern \"C\" __global__ void kd_main(int x) {}"));
  EXPECT_EQ(int_param.status, CandidateStatus::bad_entry_signature) << int_param.message;
  EXPECT_FALSE(int_param.log.empty() && int_param.message.empty());
}

TEST(CompileService, MacroMadeEntryThatDoesNotExistIsMissing) {
  CompileService service({.threads = 1});
  const CandidateBuild build = service.compile(request(
      kContract + test::plan_for("kd_main") +
      "#define ENTRY(name) extern \"C\" __global__ void name(kd_gemm_args a) {}\nENTRY(kd_other)"));
  EXPECT_EQ(build.status, CandidateStatus::missing_entry) << build.message;
  EXPECT_EQ(service.compiles_started(), 1u);
}

TEST(CompileService, SecondCompileOfTheSameSourceIsAMemoryHit) {
  CompileService service({.threads = 1});
  const CandidateBuild first = service.compile(request(test::good_kernel()));
  const CandidateBuild second = service.compile(request(test::good_kernel()));
  ASSERT_TRUE(first.ok()) << first.message;
  ASSERT_TRUE(second.ok()) << second.message;
  EXPECT_EQ(second.cache, CacheSource::memory);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_EQ(service.compiles_started(), 1u);
  // Another arch or option is another key.
  CompileRequest other = request(test::good_kernel());
  other.extra_options = {"--use_fast_math"};
  EXPECT_TRUE(service.compile(other).ok());
  EXPECT_EQ(service.compiles_started(), 2u);
}

TEST(CompileService, DiskCacheServesANewService) {
  ::kd::test::TempDir dir;
  std::string cubin;
  {
    CompileService first({.threads = 1, .cache_dir = dir.path()});
    const CandidateBuild build = first.compile(request(test::good_kernel()));
    ASSERT_TRUE(build.ok()) << build.message;
    cubin = build.cubin;
    for (const char* ext : {".cubin", ".ptx", ".log", ".meta"}) {
      EXPECT_TRUE(std::filesystem::exists(dir.path() / (build.cache_key + ext))) << ext;
    }
  }
  CompileService second({.threads = 1, .cache_dir = dir.path()});
  const CandidateBuild build = second.compile(request(test::good_kernel()));
  ASSERT_TRUE(build.ok()) << build.message;
  EXPECT_EQ(build.cache, CacheSource::disk);
  EXPECT_EQ(build.cubin, cubin);
  EXPECT_EQ(second.compiles_started(), 0u);
  // A compile error is cached too, with its log.
  const CompileRequest broken = request(kContract + test::plan_for("kd_main") +
                                         "extern \"C\" __global__ void kd_main(kd_gemm_args a) { x = 1; }");
  EXPECT_EQ(second.compile(broken).status, CandidateStatus::compile_error);
  CompileService third({.threads = 1, .cache_dir = dir.path()});
  const CandidateBuild again = third.compile(broken);
  EXPECT_EQ(again.status, CandidateStatus::compile_error);
  EXPECT_EQ(again.cache, CacheSource::disk);
  EXPECT_FALSE(again.log.empty());
}

TEST(CompileService, EightDistinctKernelsCompileInParallel) {
  CompileService service({.threads = 8});
  std::vector<CompileRequest> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(request(test::good_kernel("kd_axpy", i + 2)));
  const std::vector<CandidateBuild> builds = service.compile_all(requests);
  ASSERT_EQ(builds.size(), 8u);
  for (const CandidateBuild& b : builds) EXPECT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(service.compiles_started(), 8u);
  for (std::size_t i = 1; i < builds.size(); ++i) EXPECT_NE(builds[i].cache_key, builds[0].cache_key);
}

TEST(CompileService, IdenticalRequestsInOneBatchShareOneCompile) {
  CompileService service({.threads = 4});
  const std::vector<CompileRequest> requests(4, request(test::good_kernel()));
  const std::vector<CandidateBuild> builds = service.compile_all(requests);
  for (const CandidateBuild& b : builds) EXPECT_TRUE(b.ok()) << b.message;
  EXPECT_EQ(service.compiles_started(), 1u);
}

// A fully unrolled loop of 20000 x 64 dependent FMAs takes NVRTC several seconds.
constexpr const char* kSlowKernel = R"(
#include <kdispatch/gemm.cuh>
// kdispatch:plan {"launches":[{"entry":"kd_slow","grid":[1,1,1],"block":[32,1,1],"smem":0}],"workspace":0}
extern "C" __global__ void kd_slow(kd_gemm_args args) {
  float* p = static_cast<float*>(args.c);
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = p[i];
#pragma unroll
  for (int j = 0; j < 100000; ++j) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + j) & 63] + p[j & 1023];
  }
  for (int i = 0; i < 64; ++i) p[i] = acc[i];
}
)";

TEST(CompileService, SlowCompileIsKilledAtTheTimeLimit) {
  CompileService service({.threads = 1, .time_limit = 1000ms});
  const auto start = std::chrono::steady_clock::now();
  const CandidateBuild build = service.compile(request(kSlowKernel, "slow.cu"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(build.status, CandidateStatus::compile_timeout) << build.message;
  EXPECT_NE(build.message.find("1000 ms"), std::string::npos) << build.message;
  EXPECT_LT(elapsed, 5s);
  // Not cached: the next try compiles again.
  EXPECT_EQ(service.compile(request(kSlowKernel, "slow.cu")).status, CandidateStatus::compile_timeout);
  EXPECT_EQ(service.compiles_started(), 2u);
}

TEST(CompileService, NvrtcFailureIsACompilerCrashWithTheReason) {
  CompileService service({.threads = 1});
  CompileRequest bad = request(test::good_kernel());
  bad.extra_options = {"--no-such-option"};
  const CandidateBuild build = service.compile(bad);
  EXPECT_EQ(build.status, CandidateStatus::compiler_crash);
  EXPECT_NE(build.message.find("NVRTC_ERROR_INVALID_OPTION"), std::string::npos) << build.message;
  EXPECT_NE(build.message.find("--no-such-option"), std::string::npos) << build.message;
}

TEST(CompileService, Bf16AndFp16HeadersResolve) {
  CompileService service({.threads = 1});
  const CandidateBuild build = service.compile(request(R"(
#include <kdispatch/gemm.cuh>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// kdispatch:plan {"launches":[{"entry":"kd_cast","grid":[1,1,1],"block":[128,1,1],"smem":0}],"workspace":0}
extern "C" __global__ void kd_cast(kd_gemm_args args) {
  const __half* a = static_cast<const __half*>(args.a);
  static_cast<__nv_bfloat16*>(args.c)[threadIdx.x] = __float2bfloat16(__half2float(a[threadIdx.x]));
}
)"));
  EXPECT_TRUE(build.ok()) << build.message << "\n" << build.log;
}

}  // namespace
}  // namespace kd::search
