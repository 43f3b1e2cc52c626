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

}  // namespace
}  // namespace kd::test

namespace kd::test {
namespace {

TEST(KdctlShow, PromptsPrintsTheVersionedPromptFiles) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"show", "prompts"});
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* name : {"ideas.v1", "implement.v1", "repair.v1"}) EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace kd::test
