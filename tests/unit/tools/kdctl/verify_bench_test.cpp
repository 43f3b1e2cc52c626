// kdctl verify and kdctl bench without a GPU: exit 4 naming the problem, never a verdict or a table;
// which records verify re-gates (GEMM and row operators' of one GPU model) and bench's shape-list
// checks, which need no GPU. (They run on a GPU in tests/gpu/kdctl.)
#include <gtest/gtest.h>

#include <algorithm>

#include "cache_snapshot.hpp"
#include "cuda/driver.hpp"
#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"
#include "verify_selection.hpp"

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

// Issue 33: verify re-gates a GPU model's row records with its GEMM ones; a record under a row line
// that does not parse is reported as damaged, never run as a GEMM.
TEST(KdctlVerify, SelectsTheGpusGemmAndRowRecords) {
  TempDir dir;
  const auto cache = dir.path() / "cache";
  make_test_cache(cache);
  add_row_records(cache);
  const std::string malformed = full("rmsnorm dtype=bf16 rows=16 cols=0 weight=1", kH100);
  {
    CacheWriter w(cache);
    w.commit_record(row_test_record(malformed, std::chrono::hours(1)));
  }
  const kdctl::CacheSnapshot snap(cache);
  const kdctl::VerifySelection h100 = kdctl::select_for_verify(snap, "sm_90", "NVIDIA H100 80GB HBM3");
  std::vector<std::string> keys;
  for (const Record& r : h100.records) keys.push_back(r.key_line);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> expected{full(bf16_shape(4096), kH100), full(bf16_shape(8192), kH100),
                                    full(f32_shape(), kH100), full(kLayernorm, kH100), full(kSoftmax, kH100)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(h100.other_gpus, 2u);  // the H200's GEMM and rmsnorm records
  EXPECT_EQ(h100.damaged, std::vector<std::string>{malformed});

  const kdctl::VerifySelection h200 = kdctl::select_for_verify(snap, "sm_90", "NVIDIA H200");
  ASSERT_EQ(h200.records.size(), 2u);
  EXPECT_TRUE(std::any_of(h200.records.begin(), h200.records.end(),
                          [](const Record& r) { return r.key_line == full(kRmsnorm, kH200); }));
  EXPECT_TRUE(kdctl::select_for_verify(snap, "sm_100", "NVIDIA H200").records.empty());  // another arch
}

TEST(KdctlVerify, ACacheWithRowRecordsWithoutAGpuIsExitFour) {
  if (cu_device_count() > 0) GTEST_SKIP() << "a GPU is present: tests/gpu/kdctl runs verify";
  TempDir dir;
  make_test_cache(dir.path() / "cache");
  add_row_records(dir.path() / "cache");
  const KdctlRun r = run_kdctl(dir.path(), {"verify", "--cache-dir", (dir.path() / "cache").string()});
  EXPECT_EQ(r.rc, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("kdctl verify: no usable GPU"), std::string::npos) << r.err;
}

// Issue 33: bench reads row operators' lines beside GEMM lines; a malformed one is named FILE:LINE
// before any GPU is needed, and a good list then needs the GPU.
TEST(KdctlBench, RowLinesAreCheckedBeforeTheGpu) {
  TempDir dir;
  const auto list = dir.path() / "rows.txt";
  write_text(list, kLayernorm + "\n" + bf16_shape(4096) + "\n" +
                       "softmax dtype=f32 rows=4 cols=8 weight=1\n" +  // 3: softmax has no weight
                       "layernorm dtype=f32 rows=16 cols=1024 weight=1\n" +  // 4: no bias= token
                       "rmsnorm dtype=f32 rows=16 cols=4096 weight=1 # calls=2\n");
  const KdctlRun bad = run_kdctl(dir.path(), {"bench", list.string(), "--cache-dir", (dir.path() / "cache").string(),
                                              "--chart", ""});
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("kdctl bench: " + list.string() + ":3: "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("softmax takes no weight or bias"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("kdctl bench: " + list.string() + ":4: "), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find(list.string() + ":1:"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find(list.string() + ":5:"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("no usable GPU"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;

  if (cu_device_count() > 0) return;  // tests/gpu/kdctl benches row lines
  write_text(list, kLayernorm + "\n" + kSoftmax + "\n");
  const KdctlRun good = run_kdctl(dir.path(), {"bench", list.string(), "--cache-dir", (dir.path() / "cache").string()});
  EXPECT_EQ(good.rc, 4) << good.out << good.err;
  EXPECT_NE(good.err.find("kdctl bench: no usable GPU"), std::string::npos) << good.err;
}

}  // namespace
}  // namespace kd::test
