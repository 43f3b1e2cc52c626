// kdctl prewarm on a GPU, following its jobs through the real kdispatchd (the `jobs` request):
// every shape settles, the per-shape table is printed, and a shape cancelled with kdctl cancel
// while the prewarm follows settles as cancelled.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <thread>

#include "daemon_process.hpp"
#include "kdctl_gpu_fixtures.hpp"
#include "kdctl_runner.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

const std::string& kSmall = kShape512;
const std::string& kOther = kShape256;
const std::string kCancelled =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1";

TEST(KdctlPrewarmOnGpu, FollowsEveryShapeUntilSettledAndPrintsTheTable) {
  KD_REQUIRE_GPU();
  TempDir dir;
  DaemonProcess daemon(dir.path(), {}, "budget_rounds = 1\nbudget_candidates = 4\n");
  write_text(dir.path() / "shapes.txt", kSmall + "\n" + kOther + "\n" + kCancelled + "  # calls=1\n");
  TempDir scratch;
  KdctlRun run;
  std::thread prewarm([&] {
    run = run_kdctl(scratch.path(), {"prewarm", (dir.path() / "shapes.txt").string(), "--socket",
                                     daemon.socket().string(), "--timeout", "600"});
  });
  const KdctlRun cancel = run_kdctl(dir.path(), {"cancel", kCancelled, "--socket", daemon.socket().string()});
  prewarm.join();
  ASSERT_EQ(run.rc, 0) << run.out << run.err << daemon.log();
  EXPECT_NE(run.out.find("queued 3 shapes"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("cuBLAS_us"), std::string::npos) << run.out;
  // The table's row (m n k; the n column is wide enough for a range, issue 29).
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"( 512 +256 +384 )"))) << run.out;
  if (cancel.rc == 0) {  // cancelled before the search ended: the follow saw it settle so
    EXPECT_NE(run.out.find("cancelled"), std::string::npos) << run.out;
  }
}

}  // namespace
}  // namespace kd::test
