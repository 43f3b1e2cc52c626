// Issue 29 on a GPU: a process's miss for an untuned n queues its bucket; the real daemon's range
// search publishes a range record; the process then hits it at every n of the bucket (each with the
// grid the record's rule computes), within strict fp32's class of cuBLAS, and misses outside it.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
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

// f32 nn.Linear(4096, 4096) on 129..256 tokens: the bucket of n = 200 under the default buckets.
constexpr std::int64_t kM = 4096, kK = 4096, kMaxN = 320;

std::uint64_t hits() {
  kd_stats_t st{};
  kd_stats(&st);
  return st.hits;
}

TEST(RangeOnGpu, ABucketIsSearchedPublishedAndServesEveryNOfIt) {
  KD_REQUIRE_GPU();
  test::TempDir dir;
  test::DaemonProcess daemon(dir.path(), {}, "budget_rounds = 1\nbudget_candidates = 12\nbuckets = \"default\"\n");
  const std::string cache = daemon.cache_dir().string(), socket = daemon.socket().string();
  kd_options o{cache.c_str(), socket.c_str(), 0, 200};
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);

  const test::LinearF32 linear(kM, kK, kMaxN);
  CUstream s = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&s, 0), "stream");

  // cuBLAS's results at the n checked below, computed before anything is tuned.
  const std::vector<std::int64_t> ns{129, 131, 192, 193, 200, 255, 256, 257};
  std::vector<std::vector<float>> reference;
  for (const std::int64_t n : ns) {
    ASSERT_EQ(linear.run(n, s), KD_SUCCESS);
    KD_CU_CHECK(cu().cuStreamSynchronize(s), "reference");
    reference.emplace_back(static_cast<std::size_t>(kM * n));
    KD_CU_CHECK(cu().cuMemcpyDtoH(reference.back().data(), linear.c.ptr, reference.back().size() * 4), "C");
  }

  // Keep calling n = 200, as a server would, until the bucket's range record is loaded.
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const std::uint64_t before = hits();
    ASSERT_EQ(linear.run(200, s), KD_SUCCESS);
    KD_CU_CHECK(cu().cuStreamSynchronize(s), "call");
    if (hits() > before) break;
    ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(420))
        << "no hit after 420 s; daemon log:\n" << daemon.log();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(daemon.log().find("n=129..256"), std::string::npos) << "the bucket was searched:\n" << daemon.log();

  for (std::size_t i = 0; i < ns.size(); ++i) {
    const std::int64_t n = ns[i];
    // The first call of a new n loads its entry on the background thread; the next ones hit.
    std::uint64_t before = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
      KD_CU_CHECK(cu().cuMemsetD32(linear.c.ptr, 0x7fc00000u, kM * n), "poison");
      before = hits();
      ASSERT_EQ(linear.run(n, s), KD_SUCCESS);
      KD_CU_CHECK(cu().cuStreamSynchronize(s), "call");
      if (hits() > before || n > 256) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const bool hit = hits() > before;
    EXPECT_EQ(hit, n <= 256) << "n=" << n << (n <= 256 ? " is in the range" : " is outside it");
    std::vector<float> out(static_cast<std::size_t>(kM * n));
    KD_CU_CHECK(cu().cuMemcpyDtoH(out.data(), linear.c.ptr, out.size() * 4), "C");
    double err = 0, ref = 0;
    for (std::size_t j = 0; j < out.size(); ++j) {
      err += (out[j] - reference[i][j]) * double(out[j] - reference[i][j]);
      ref += double(reference[i][j]) * reference[i][j];
    }
    EXPECT_LT(std::sqrt(err / ref), 1e-5) << "n=" << n << ": differs from cuBLAS";
  }
  kd_stats_t st{};
  kd_stats(&st);
  std::printf("range record served after %.1f s: hits=%llu misses=%llu loads=%llu\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.misses),
              static_cast<unsigned long long>(st.loads));
  cu().cuStreamDestroy(s);
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
}

}  // namespace
}  // namespace kd
