// kdctl validate's checks that need no GPU: usage errors are exit 2 and name the problem; on a
// machine without a GPU a well-formed request is exit 4, never a verdict.
#include <gtest/gtest.h>

#include "cuda/driver.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

constexpr const char* kKey =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 epilogue=none beta0=1";

TEST(KdctlValidate, BadKeyIsAUsageErrorNamingTheColumn) {
  TempDir dir;
  write_text(dir.path() / "k.cu", "// nothing");
  const KdctlRun r = run_kdctl(dir.path(), {"validate", "--key", "gemm a=f33", "--kernel", (dir.path() / "k.cu").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("column"), std::string::npos) << r.err;
}

TEST(KdctlValidate, MissingKernelFileIsAUsageError) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"validate", "--key", kKey, "--kernel", (dir.path() / "none.cu").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("none.cu"), std::string::npos) << r.err;
}

TEST(KdctlValidate, WithoutAGpuSaysSoWithExitFour) {
  if (cu_device_count() > 0) GTEST_SKIP() << "a GPU is present: the GPU path is tested on the device";
  TempDir dir;
  write_text(dir.path() / "k.cu", "extern \"C\" __global__ void k() {}");
  const KdctlRun r = run_kdctl(dir.path(), {"validate", "--key", kKey, "--kernel", (dir.path() / "k.cu").string()});
  EXPECT_EQ(r.rc, 4);
  EXPECT_NE(r.err.find("no usable GPU"), std::string::npos) << r.err;
}

// Issue 33: a row operator's key is validated as a GEMM's is: a malformed row line is a usage error
// naming the token, a well-formed one needs the GPU.
TEST(KdctlValidate, RowKeysAreParsedBeforeTheGpuIsNeeded) {
  TempDir dir;
  write_text(dir.path() / "k.cu", "#include <kdispatch/rowop.cuh>\nextern \"C\" __global__ void kd_main(kd_row_args) {}\n");
  const std::string kernel = (dir.path() / "k.cu").string();
  const KdctlRun bad = run_kdctl(dir.path(), {"validate", "--key", "layernorm dtype=f32 rows=16 cols=1024 weight=1",
                                              "--kernel", kernel});
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("kdctl validate: bad --key: column"), std::string::npos) << bad.err;
  if (cu_device_count() > 0) return;  // the GPU path is tested on the device
  const KdctlRun good = run_kdctl(dir.path(), {"validate", "--key", "layernorm dtype=f32 rows=16 cols=1024 weight=1 bias=1",
                                               "--kernel", kernel});
  EXPECT_EQ(good.rc, 4) << good.out << good.err;
  EXPECT_NE(good.err.find("no usable GPU"), std::string::npos) << good.err;
}

// Issue 29: a kernel for a range key must carry a plan that serves every n; that is checked before
// a GPU is needed. Its grid's y follows ceil(n / 16) here, so at n=64 it must be 4.
std::string range_kernel(int grid_y) {
  return "// kdispatch:plan {\"launches\":[{\"entry\":\"kd_main\",\"grid\":[8," + std::to_string(grid_y) +
         ",1],\"grid_rule\":[null,{\"offset\":15,\"div\":16},null],\"block\":[32,8,1],\"smem\":0}],"
         "\"workspace\":0}\n#include <kdispatch/gemm.cuh>\nextern \"C\" __global__ void kd_main(kd_gemm_args) {}\n";
}

TEST(KdctlValidate, ARangeKernelWhosePlanDoesNotServeTheRangeIsRejectedWithoutAGpu) {
  TempDir dir;
  write_text(dir.path() / "k.cu", range_kernel(3));
  const KdctlRun r = run_kdctl(dir.path(), {"validate", "--key", "linear dtype=f32 tokens=33..64 in=256 out=256",
                                            "--kernel", (dir.path() / "k.cu").string()});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: plan_invalid  (rejected before running)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not serve n=33..64: plan: launches[0].grid_rule[1]: 4 at n=64, but grid[1] is 3"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("grid_rule"), std::string::npos) << "the message names the fix: " << r.out;
  const KdctlRun json = run_kdctl(dir.path(), {"validate", "--key", "linear dtype=f32 tokens=33..64 in=256 out=256",
                                               "--kernel", (dir.path() / "k.cu").string(), "--json"});
  EXPECT_EQ(json.rc, 1) << json.out << json.err;
  EXPECT_NE(json.out.find("\"rule\": \"plan_invalid\""), std::string::npos) << json.out;
}

TEST(KdctlValidate, ARangeKernelWhosePlanServesTheRangeNeedsTheGpu) {
  if (cu_device_count() > 0) GTEST_SKIP() << "a GPU is present: tests/gpu/kdctl runs the range gate";
  TempDir dir;
  write_text(dir.path() / "k.cu", range_kernel(4));
  const KdctlRun r = run_kdctl(dir.path(), {"validate", "--key", "linear dtype=f32 tokens=33..64 in=256 out=256",
                                            "--kernel", (dir.path() / "k.cu").string()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("no usable GPU"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kd::test

namespace kd::test {
namespace {

TEST(KdctlShow, PromptsPrintsTheVersionedPromptFiles) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"show", "prompts"});
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* name : {"ideas.v1", "implement.v1", "repair.v1", "ideas.row.v1", "implement.row.v1", "repair.row.v1"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace kd::test
