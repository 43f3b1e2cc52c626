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

// The shape list is checked before the GPU: bad range lines are named FILE:LINE on any machine
// (issue 29: an inverted range, one of a single value, one that overlaps an exact key).
TEST(KdctlBench, BadRangeLinesAreNamedByFileAndLineWithOrWithoutAGpu) {
  TempDir dir;
  const auto list = dir.path() / "shapes.txt";
  write_text(list,
             "linear dtype=f32 tokens=40 in=768 out=768\n"
             "linear dtype=f32 tokens=64..33 in=768 out=768\n"
             "linear dtype=f32 tokens=8..8 in=768 out=768\n"
             "linear dtype=f32 tokens=33..64 in=768 out=768\n"
             "linear dtype=f32 tokens=.. in=768 out=768\n");
  const KdctlRun r = run_kdctl(dir.path(), {"bench", list.string(), "--cache-dir", (dir.path() / "cache").string(),
                                            "--chart", ""});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  const std::string at = "kdctl bench: " + list.string();
  EXPECT_NE(r.err.find(at + ":2: column 18: token 'tokens=64..33': the range is inverted (64 > 33): write tokens=33..64"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(at + ":3: column 18: token 'tokens=8..8': a range of one value: write tokens=8"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(at + ":4: n=33..64 overlaps n=40 of an otherwise equal key at " + list.string() + ":1"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(at + ":5: column 18: token 'tokens=..': a range needs both ends"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no usable GPU"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(KdctlBench, AGoodRangeLineNeedsTheGpu) {
  if (cu_device_count() > 0) GTEST_SKIP() << "a GPU is present: tests/gpu/kdctl times ranges";
  TempDir dir;
  const auto list = dir.path() / "shapes.txt";
  write_text(list, "linear dtype=f32 tokens=33..64 in=768 out=768\nlinear dtype=f32 tokens=65 in=768 out=768\n");
  const KdctlRun r = run_kdctl(dir.path(), {"bench", list.string(), "--cache-dir", (dir.path() / "cache").string()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("kdctl bench: no usable GPU"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kd::test
