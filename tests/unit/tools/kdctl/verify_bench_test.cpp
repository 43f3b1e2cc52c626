// kdctl verify and kdctl bench without a GPU: exit 4 naming the problem, never a verdict or a table.
// (They run on a GPU in tests/gpu/kdctl.)
#include <gtest/gtest.h>

#include "cuda/driver.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

TEST(KdctlVerifyBench, WithoutAGpuBothSaySoWithExitFour) {
  if (cu_device_count() > 0) GTEST_SKIP() << "a GPU is present: tests/gpu/kdctl runs these";
  TempDir dir;
  make_test_cache(dir.path() / "cache");
  write_text(dir.path() / "shapes.txt", bf16_shape(4096) + "\n");
  const auto cache = (dir.path() / "cache").string();
  const KdctlRun verify = run_kdctl(dir.path(), {"verify", "--cache-dir", cache});
  EXPECT_EQ(verify.rc, 4);
  EXPECT_NE(verify.err.find("kdctl verify: no usable GPU"), std::string::npos) << verify.err;
  EXPECT_TRUE(verify.out.empty()) << verify.out;
  const KdctlRun bench = run_kdctl(dir.path(), {"bench", (dir.path() / "shapes.txt").string(), "--cache-dir", cache,
                                                "--chart", (dir.path() / "chart.png").string()});
  EXPECT_EQ(bench.rc, 4);
  EXPECT_NE(bench.err.find("kdctl bench: no usable GPU"), std::string::npos) << bench.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "chart.png"));
}

}  // namespace
}  // namespace kd::test
