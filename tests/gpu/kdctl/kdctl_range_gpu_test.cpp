// kdctl validate, bench and search on range keys (issue 29) on a GPU, run as the real kdctl. The
// kernels are tests/gpu/eval's naive f32 GEMM (one thread per output, guarded) with a plan whose
// grid's y follows n by a rule, ceil(n / 8), and one that writes zeros (which the gate must fail).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiled_record.hpp"
#include "cuda/device.hpp"
#include "kdctl_gpu_fixtures.hpp"
#include "kdctl_runner.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

// 512 x n x 384 f32, ta=N tb=N, beta = 0, n = 129..256: the naive kernel's 16 x ceil(n / 8) blocks of
// 32 x 8 threads cover it.
const std::string kRange =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=512 n=129..256 k=384 lda=512 ldb=384 ldc=512 batch=1 "
    "epilogue=none beta0=1";

constexpr const char* kPlan =
    R"(// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[16,32,1],"grid_rule":[null,{"offset":7,"div":8},null],"block":[32,8,1],"smem":0}],"workspace":0})";

const std::string kNaiveSource = naive_f32_kernel(kPlan);
const std::string kZerosSource = zeros_kernel(kPlan);

class KdctlRangeOnGpu : public ::testing::Test {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    dev_ = query_device(0);
  }
  std::filesystem::path cache() const { return tmp_.path() / "cache"; }
  KdctlRun kdctl(std::vector<std::string> args) {
    args.insert(args.end(), {"--cache-dir", cache().string()});
    return run_kdctl(tmp_.path(), args);
  }
  // Stores the naive kernel as the range record of kRange on this device.
  void store_range_record() {
    const Record r = compiled_record(on_device(kRange, dev_), kNaiveSource, dev_.arch, "gpu-kdctl-range-test");
    ASSERT_FALSE(r.cubin.empty()) << "the naive kernel did not compile";
    CacheWriter writer(cache());  // closed before kdctl opens the cache
    writer.commit_record(r);
  }

  TempDir tmp_;
  DeviceInfo dev_;
};

TEST_F(KdctlRangeOnGpu, ValidateHoldsARangeKernelToTheGateAtEveryPoint) {
  write_text(tmp_.path() / "naive.cu", kNaiveSource);
  const KdctlRun r = run_kdctl(tmp_.path(), {"validate", "--key", kRange, "--kernel", (tmp_.path() / "naive.cu").string()});
  std::printf("%s", r.out.c_str());
  // The naive kernel is correct; whether it beats cuBLAS is the GPU's business.
  EXPECT_TRUE(r.rc == 0 || r.rc == 3) << r.out << r.err;
  EXPECT_NE(r.out.find("range gate for n=129..256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  n=129 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  n=256 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("us vs cuBLAS"), std::string::npos) << "the timed points carry times:\n" << r.out;
  EXPECT_NE(r.out.find("(checked, not timed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(r.rc == 0 ? "verdict: passed" : "verdict: correct at every checked n, but n="),
            std::string::npos)
      << r.out;

  const KdctlRun json = run_kdctl(tmp_.path(), {"validate", "--key", kRange, "--kernel",
                                                (tmp_.path() / "naive.cu").string(), "--json"});
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report.at("range").at("lo"), 129);
  EXPECT_EQ(report.at("range").at("hi"), 256);
  EXPECT_GE(report.at("range").at("checked").size(), 3u);

  write_text(tmp_.path() / "zeros.cu", kZerosSource);
  const KdctlRun bad = run_kdctl(tmp_.path(), {"validate", "--key", kRange, "--kernel", (tmp_.path() / "zeros.cu").string()});
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("verdict: rejected: n=129: "), std::string::npos) << "the first checked n fails:\n" << bad.out;
}

TEST_F(KdctlRangeOnGpu, BenchTimesARangeRecordAtItsTimedPointsAndACoveredNWithIt) {
  store_range_record();
  // One list holds a range or the exact n inside it, never both (FILE:LINE error): two lists.
  const auto ranged = tmp_.path() / "ranged.txt";
  const auto exact = tmp_.path() / "exact.txt";
  write_text(ranged, kRange + "\n");
  write_text(exact, std::get<GemmKey>(parse_key(kRange)).at_n(200).shape_line() + "\n");
  const KdctlRun r = kdctl({"bench", ranged.string(), "--chart", ""});
  std::printf("%s", r.out.c_str());
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const KdctlRun e = kdctl({"bench", exact.string(), "--chart", ""});
  std::printf("%s", e.out.c_str());
  ASSERT_EQ(e.rc, 0) << e.out << e.err;
  // The range's three timed n, and the exact n = 200, each a row served by the range record.
  const auto tagged = [](const std::string& out) {
    std::size_t count = 0;
    for (std::size_t at = out.find("(range 129..256)"); at != std::string::npos; at = out.find("(range 129..256)", at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(tagged(r.out), 3u) << r.out;
  EXPECT_EQ(tagged(e.out), 1u) << e.out;
  for (const char* n : {"   129 ", "   256 "}) EXPECT_NE(r.out.find(n), std::string::npos) << n << "\n" << r.out;
  EXPECT_NE(e.out.find("   200 "), std::string::npos) << e.out;
  EXPECT_EQ(r.out.find("fails now"), std::string::npos) << r.out;
  EXPECT_EQ(e.out.find("fails now"), std::string::npos) << e.out;
}

TEST_F(KdctlRangeOnGpu, SearchOfARangeKeyPublishesARangeRecordOrSaysWhyNot) {
  const KdctlRun r = kdctl({"search", "--key", "linear dtype=f32 tokens=33..64 in=1024 out=1024", "--rounds", "0",
                            "--max-candidates", "4"});
  std::printf("%s", r.out.c_str());
  ASSERT_TRUE(r.rc == 0 || r.rc == 3) << r.out << r.err;
  EXPECT_NE(r.out.find("a range of n: searched at n=64"), std::string::npos) << r.out;
  if (r.rc == 3) {
    EXPECT_NE(r.out.find("kept cuBLAS for n=33..64: "), std::string::npos) << r.out;
    return;
  }
  EXPECT_NE(r.out.find("range winner: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("published to"), std::string::npos) << r.out;
  const KdctlRun ls = kdctl({"ls", "--json"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  EXPECT_NE(ls.out.find("n=33..64"), std::string::npos) << ls.out;
  // The published record passes kdctl verify, which gates it at the same points.
  const KdctlRun verify = kdctl({"verify", "--dry-run"});
  EXPECT_EQ(verify.rc, 0) << verify.out << verify.err;
}

}  // namespace
}  // namespace kd::test
