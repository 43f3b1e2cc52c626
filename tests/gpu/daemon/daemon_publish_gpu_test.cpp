#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "daemon_process.hpp"
#include "kdispatch/kdispatch.h"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

// f32 nn.Linear on 16 tokens: the builtin search beats cuBLAS here (3xTF32 skinny_bulk).
constexpr std::int64_t kM = 4096, kN = 16, kK = 4096;

using test::DeviceBuffer;

int gemm(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream s) {
  const float alpha = 1.f, beta = 0.f;
  return kd_gemm(KD_OP_T, KD_OP_N, kM, kN, kK, &alpha, reinterpret_cast<const void*>(a), KD_DTYPE_F32, kK,
                 reinterpret_cast<const void*>(b), KD_DTYPE_F32, kK, &beta, reinterpret_cast<void*>(c),
                 KD_DTYPE_F32, kM, KD_COMPUTE_F32, KD_MATH_DEFAULT, s);
}

TEST(DaemonOnGpu, MissIsTunedPublishedAndLaunchedBySubscribedProcess) {
  KD_REQUIRE_GPU();
  test::TempDir dir;
  // Full speed: this test is about publishing (the GPU policy of miss-started searches has its own).
  test::DaemonProcess daemon(dir.path(), {}, "budget_rounds = 1\nbudget_candidates = 12\nsearch_duty_cycle = 1\n");

  const std::string cache = daemon.cache_dir().string(), socket = daemon.socket().string();
  kd_options o{cache.c_str(), socket.c_str(), 0, 200};
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);

  std::vector<float> ha(kM * kK), hb(kK * kN);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  for (float& x : ha) x = dist(rng);
  for (float& x : hb) x = dist(rng);
  DeviceBuffer a(ha.size() * 4), b(hb.size() * 4), c(kM * kN * 4);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, ha.data(), ha.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, hb.data(), hb.size() * 4), "B");
  CUstream s = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&s, 0), "stream");

  // The miss: computed by cuBLAS, reported to the daemon.
  ASSERT_EQ(gemm(a.ptr, b.ptr, c.ptr, s), KD_SUCCESS);
  KD_CU_CHECK(cu().cuStreamSynchronize(s), "miss");
  std::vector<float> reference(kM * kN), tuned(kM * kN);
  KD_CU_CHECK(cu().cuMemcpyDtoH(reference.data(), c.ptr, reference.size() * 4), "C");

  // Keep calling, as a server would, until the published kernel is loaded and launched.
  const auto start = std::chrono::steady_clock::now();
  kd_stats_t st{};
  for (;;) {
    ASSERT_EQ(gemm(a.ptr, b.ptr, c.ptr, s), KD_SUCCESS);
    KD_CU_CHECK(cu().cuStreamSynchronize(s), "call");
    kd_stats(&st);
    if (st.hits > 0) break;
    ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(240))
        << "no hit after 240 s; daemon log:\n" << daemon.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // One more call on poisoned output: the tuned kernel computes C (within strict-f32 error).
  KD_CU_CHECK(cu().cuMemsetD32(c.ptr, 0x7fc00000u, kM * kN), "poison");
  ASSERT_EQ(gemm(a.ptr, b.ptr, c.ptr, s), KD_SUCCESS);
  KD_CU_CHECK(cu().cuStreamSynchronize(s), "hit");
  KD_CU_CHECK(cu().cuMemcpyDtoH(tuned.data(), c.ptr, tuned.size() * 4), "C");
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
