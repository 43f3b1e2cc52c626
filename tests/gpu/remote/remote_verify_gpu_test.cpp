// The remote tier's gate on a GPU (remote_trust = "verify"): a record from the fleet passes this
// machine's validation gate before it is used, and a forged one (a correct record's cubin with a
// plan that launches too few blocks: well-formed, with a correct checksum) fails it and is rejected
// by name. Skipped without a GPU.
#include <gtest/gtest.h>

#include "gemm_fixture.hpp"
#include "remote/record_verifier.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

Config gpu_config(const std::filesystem::path& cache) {
  Config c;
  c.cache_dir = cache;
  c.workers = "0";
  return c;
}

TEST(RemoteVerifyGpu, ASoundRecordPassesAndAForgedOneFails) {
  KD_REQUIRE_GPU();
  test::TempDir dir;
  const test::GemmShape shape;
  const GemmKey key = test::gemm_key_for(shape, /*beta_zero=*/true);
  const Record good = test::make_gemm_record(key, shape, test::KernelVariant::tiled, 0);
  auto verifier = make_record_verifier(gpu_config(dir.path()), "");
  ASSERT_FALSE(verifier->unavailable());
  const GateResult passed = verifier->verify(good);
  EXPECT_TRUE(passed.passed) << passed.detail;

  Record forged = good;
  ASSERT_FALSE(forged.plan.launches.empty());
  forged.plan.launches.front().grid[0] = 1;  // computes one tile of C and leaves the rest unwritten
  const GateResult failed = verifier->verify(forged);
  EXPECT_FALSE(failed.passed) << "a forged record must fail this machine's gate";
}

}  // namespace
}  // namespace kd::daemon
