#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "daemon_process.hpp"
#include "linear_f32.hpp"
#include "kdispatch/kdispatch.h"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

// f32 nn.Linear on 16 tokens: the builtin search beats cuBLAS here (3xTF32 skinny_bulk).
constexpr std::int64_t kM = 4096, kN = 16, kK = 4096;

TEST(DaemonOnGpu, MissIsTunedPublishedAndLaunchedBySubscribedProcess) {
  KD_REQUIRE_GPU();
  test::TempDir dir;
  // Full speed: this test is about publishing (the GPU policy of miss-started searches has its own).
  test::DaemonProcess daemon(dir.path(), {}, "budget_rounds = 1\nbudget_candidates = 12\nsearch_duty_cycle = 1\n");

  const std::string cache = daemon.cache_dir().string(), socket = daemon.socket().string();
  kd_options o{cache.c_str(), socket.c_str(), 0, 200};
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);

  const test::LinearF32 linear(kM, kK, kN);
  CUstream s = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&s, 0), "stream");

  // The miss: computed by cuBLAS, reported to the daemon.
  ASSERT_EQ(linear.run(kN, s), KD_SUCCESS);
  KD_CU_CHECK(cu().cuStreamSynchronize(s), "miss");
  std::vector<float> reference(kM * kN), tuned(kM * kN);
  KD_CU_CHECK(cu().cuMemcpyDtoH(reference.data(), linear.c.ptr, reference.size() * 4), "C");

  // Keep calling, as a server would, until the published kernel is loaded and launched.
  const auto start = std::chrono::steady_clock::now();
  kd_stats_t st{};
  for (;;) {
    ASSERT_EQ(linear.run(kN, s), KD_SUCCESS);
    KD_CU_CHECK(cu().cuStreamSynchronize(s), "call");
    kd_stats(&st);
    if (st.hits > 0) break;
    ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(240))
        << "no hit after 240 s; daemon log:\n" << daemon.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // One more call on poisoned output: the tuned kernel computes C (within strict-f32 error).
  KD_CU_CHECK(cu().cuMemsetD32(linear.c.ptr, 0x7fc00000u, kM * kN), "poison");
  ASSERT_EQ(linear.run(kN, s), KD_SUCCESS);
  KD_CU_CHECK(cu().cuStreamSynchronize(s), "hit");
  KD_CU_CHECK(cu().cuMemcpyDtoH(tuned.data(), linear.c.ptr, tuned.size() * 4), "C");
  double err = 0, ref = 0;
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    err += (tuned[i] - reference[i]) * double(tuned[i] - reference[i]);
    ref += double(reference[i]) * reference[i];
  }
  const double rel = std::sqrt(err / ref);
  EXPECT_LT(rel, 1e-5) << "tuned result differs from cuBLAS";
  kd_stats(&st);
  EXPECT_GE(st.loads, 1u);
  EXPECT_EQ(st.daemon_connected, 1);
  std::printf("published kernel launched after %.1f s: hits=%llu misses=%llu loads=%llu, norm-relative "
              "difference from cuBLAS %.2e\n", waited, static_cast<unsigned long long>(st.hits),
              static_cast<unsigned long long>(st.misses), static_cast<unsigned long long>(st.loads), rel);
  cu().cuStreamDestroy(s);
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
}

}  // namespace
}  // namespace kd
