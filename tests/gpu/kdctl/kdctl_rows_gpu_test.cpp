// Issue 33: kdctl verify, bench and validate on row operators' records and keys, run as the real
// kdctl on a cache holding records of row kernels this test compiles with NVRTC for device 0: a
// correct f32 layernorm and one that writes zeros (which the gate must fail). The baseline is the
// framework's kernel: PyTorch's when the machine has it, else the evaluator's f32 stand-in, named
// either way; nothing a row line prints says cuBLAS.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiled_record.hpp"
#include "cuda/device.hpp"
#include "kdctl_gpu_fixtures.hpp"
#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

constexpr const char* kRowPlan =
    R"(// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[128,1,1],"block":[256,1,1],"smem":0}],"workspace":0})";
const std::string& kGoodRow = kRowShape256;
const std::string& kBadRow = kRowShape128;
const std::string kUntunedRow = "softmax dtype=f32 rows=4096 cols=1024";

// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = std::min(text.find('\n', at), text.size());
    if (text.compare(at, prefix.size(), prefix) == 0) out.push_back(text.substr(at, end - at));
  }
  return out;
}

class KdctlRowsOnGpu : public KdctlCacheOnGpu {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    dev_ = query_device(0);
    CacheWriter writer(cache());  // closed before kdctl opens the cache
    writer.commit_record(
        compiled_record(on_device(kGoodRow, dev_), layernorm_f32_kernel(), dev_.arch, "gpu-kdctl-rows"));
    writer.commit_record(
        compiled_record(on_device(kBadRow, dev_), row_zeros_kernel(kRowPlan), dev_.arch, "gpu-kdctl-rows"));
  }
};

TEST_F(KdctlRowsOnGpu, VerifyRegatesRowRecordsAgainstTheFrameworksKernelAndEvictsTheFailure) {
  const KdctlRun dry = kdctl({"verify", "--dry-run"});
  std::printf("%s", dry.out.c_str());
  EXPECT_EQ(dry.rc, 1) << dry.out << dry.err;  // the zeros kernel fails
  EXPECT_NE(dry.out.find("verifying 2 records for " + dev_.name), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("cuBLAS"), std::string::npos) << dry.out;
  const auto good = lines_starting(dry.out, "passed");
  const auto not_faster = lines_starting(dry.out, "not_faster");
  const std::string good_line = good.empty() ? (not_faster.empty() ? "" : not_faster.front()) : good.front();
  EXPECT_NE(good_line.find(kGoodRow), std::string::npos) << "the correct kernel passes the gate:\n" << dry.out;
  EXPECT_NE(good_line.find("(baseline: "), std::string::npos) << good_line;
  EXPECT_NE(dry.out.find(kBadRow), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("1 passed, 1 failed (dry run: nothing evicted)"), std::string::npos) << dry.out;
  EXPECT_EQ(stored_shapes().size(), 2u);

  const KdctlRun real = kdctl({"verify"});
  EXPECT_EQ(real.rc, 1) << real.out << real.err;
  EXPECT_NE(real.out.find("1 passed, 1 failed (evicted)"), std::string::npos) << real.out;
  EXPECT_EQ(stored_shapes(), std::vector<std::string>{kGoodRow});
}

TEST_F(KdctlRowsOnGpu, BenchTimesRowLinesInTheirOwnTable) {
  const auto shapes = tmp_.path() / "rows.txt";
  write_text(shapes, kGoodRow + "\n" + kUntunedRow + "\n");
  const auto chart = tmp_.path() / "chart.png";
  const KdctlRun r = kdctl({"bench", shapes.string(), "--chart", chart.string()});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::printf("%s", r.out.c_str());
  EXPECT_NE(r.out.find("base_us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("iso_base"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cuBLAS"), std::string::npos) << "no GEMM table for a list of row lines:\n" << r.out;
  const auto tuned = lines_starting(r.out, "layernorm");
  ASSERT_EQ(tuned.size(), 1u) << r.out;
  EXPECT_NE(tuned.front().find("user"), std::string::npos) << "the tuned row names its proposer: " << tuned.front();
  EXPECT_NE(tuned.front().find("(vs "), std::string::npos) << "and the framework's kernel: " << tuned.front();
  const auto untuned = lines_starting(r.out, "softmax");
  ASSERT_EQ(untuned.size(), 1u) << r.out;
  EXPECT_NE(untuned.front().find("the framework's kernel kept: no tuned kernel (not_found)"), std::string::npos)
      << untuned.front();
  EXPECT_NE(r.out.find("chart: " + chart.string() + " (per shape: speedup over the framework kernel"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::exists(chart));
}

// validate holds a row key's kernel to kd_row_args (not kd_gemm_args) and names its baseline.
TEST_F(KdctlRowsOnGpu, ValidateGatesARowKernel) {
  const auto kernel = tmp_.path() / "layernorm.cu";
  write_text(kernel, layernorm_f32_kernel());
  const KdctlRun r = run_kdctl(tmp_.path(), {"validate", "--key", kGoodRow, "--kernel", kernel.string()});
  std::printf("%s", r.out.c_str());
  EXPECT_TRUE(r.rc == 0 || r.rc == 3) << "correct, faster or not:\n" << r.out << r.err;
  EXPECT_EQ(r.out.find("kd_gemm_args"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cuBLAS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the evaluator's f32 kernel max_rel"), std::string::npos) << r.out;

  write_text(kernel, row_zeros_kernel(kRowPlan));
  const KdctlRun zeros = run_kdctl(tmp_.path(), {"validate", "--key", kGoodRow, "--kernel", kernel.string()});
  EXPECT_EQ(zeros.rc, 1) << zeros.out << zeros.err;
  EXPECT_NE(zeros.out.find("(rejected)"), std::string::npos) << zeros.out;
}

}  // namespace
}  // namespace kd::test
