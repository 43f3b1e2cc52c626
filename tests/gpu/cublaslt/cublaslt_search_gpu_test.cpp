// A cuBLASLt search on real shapes: the worker enumerates the heuristic's algorithms and split-K
// variants, and every one of them goes through the validation gate and interleaved timing against
// cuBLAS, ending with a verdict. Prints each candidate and the best time against cuBLAS's.
#include <gtest/gtest.h>

#include <set>

#include "cublaslt_gpu_common.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

// Verdicts that mean the gate did not get to judge the candidate.
const std::set<std::string> kNoJudgement = {"not_evaluated", "key_invalid", "load_failed", "launch_failed",
                                            "hang_timeout",  "crashed",     "internal_error"};

TEST(CublasLtSearchOnGpu, EveryCandidateOfBf16AndF32DecodeShapesGetsAVerdict) {
  KD_REQUIRE_GPU();
  test::TempDir cache;
  for (const GemmKey& key : test::cublaslt_test_keys()) {
    SCOPED_TRACE(key.shape_line());
    const search::SearchOutcome out = test::cublaslt_search(key, cache.path().string(), eval::Timing::measure);
    ASSERT_FALSE(out.tree.nodes().empty());
    int correct = 0;
    for (const search::Node& n : out.tree.nodes()) {
      ASSERT_TRUE(n.cublaslt.has_value()) << "node " << n.id << " is not an algorithm: " << n.verdict << ": " << n.detail;
      EXPECT_EQ(kNoJudgement.count(n.verdict), 0u) << "node " << n.id << " (" << n.idea << "): " << n.verdict << ": "
                                                   << n.detail;
      if (n.correct()) {
        ++correct;
        EXPECT_GT(n.candidate_us, 0) << n.idea;
        EXPECT_GT(n.baseline_us, 0) << n.idea;
      }
    }
    // cuBLASLt's own first choice is what cuBLAS runs: it must pass the gate.
    EXPECT_GT(correct, 0) << "no cuBLASLt algorithm passed the gate";
  }
}

}  // namespace
}  // namespace kd
