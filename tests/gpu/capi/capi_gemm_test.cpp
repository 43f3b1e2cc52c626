// kd_gemm on a GPU: an NVRTC-compiled GEMM record stored, looked up and launched (checked against
// cuBLAS and fp64); a second record hot-swapped in while 8 threads launch continuously; a miss
// equal to cuBLAS bit for bit; a record with a workspace captured into CUDA graphs.
#include <gtest/gtest.h>

#include <cublas_v2.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "gemm_fixture.hpp"
#include "kdispatch/kdispatch.h"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;
using test::GemmShape;

constexpr std::uint32_t kNaNBits = 0x7fc00000u;

using test::DeviceBuffer;

kd_stats_t stats() {
  kd_stats_t s{};
  EXPECT_EQ(kd_stats(&s), KD_SUCCESS);
  return s;
}

class CapiGemm : public ::testing::Test {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    cache_ = (dir_.path() / "cache").string();
    KD_CU_CHECK(cu().cuCtxGetCurrent(&ctx_), "current context");
  }
  void TearDown() override {
    if (initialized_) {
      EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
    }
  }
  void init(unsigned flags = 0) {
    kd_options o{};
    o.cache_dir = cache_.c_str();
    o.flags = KD_NO_DAEMON | flags;
    o.poll_interval_ms = 50;
    ASSERT_EQ(kd_init(&o), KD_SUCCESS);
    initialized_ = true;
  }
  // kd_gemm of the fixture shape, beta = 0, on `stream`.
  int gemm(const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c, float alpha,
           CUstream stream) const {
    const float beta = 0.f;
    return kd_gemm(KD_OP_N, KD_OP_N, shape_.m, shape_.n, shape_.k, &alpha, a.get(), KD_DTYPE_F32,
                   shape_.m, b.get(), KD_DTYPE_F32, shape_.k, &beta, c.get(), KD_DTYPE_F32, shape_.m,
                   KD_COMPUTE_F32, KD_MATH_DEFAULT, stream);
  }
  // Calls kd_gemm until a call is a hit (the background thread loaded the record), at most 10 s.
  bool wait_for_hit(const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c) {
    for (int i = 0; i < 1000; ++i) {
      const std::uint64_t hits = stats().hits;
      if (gemm(a, b, c, 1.f, nullptr) != KD_SUCCESS) return false;
      if (stats().hits > hits) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  test::TempDir dir_;
  std::string cache_;
  CUcontext ctx_ = nullptr;
  bool initialized_ = false;
  GemmShape shape_;
};

std::vector<float> download(const DeviceBuffer& buf, std::size_t count, CUstream stream) {
  std::vector<float> out(count);
  KD_CU_CHECK(cu().cuStreamSynchronize(stream), "gemm");
  KD_CU_CHECK(cu().cuMemcpyDtoH(out.data(), buf.ptr, count * sizeof(float)), "C");
  return out;
}

TEST_F(CapiGemm, StoredRecordIsLookedUpLaunchedAndMatchesCublas) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::plain, 1));
  }
  init();
  const float alpha = 0.75f;
  const test::HostGemm h = test::make_host_gemm(shape_, alpha, 1);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), c(mn * 4), c_ref(mn * 4);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, h.a.data(), h.a.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, h.b.data(), h.b.size() * 4), "B");
  ASSERT_TRUE(wait_for_hit(a, b, c)) << "the record never loaded: " << stats().load_failures
                                     << " load failures";

  KD_CU_CHECK(cu().cuMemsetD32(c.ptr, kNaNBits, mn), "poison C");
  const kd_stats_t before = stats();
  ASSERT_EQ(gemm(a, b, c, alpha, nullptr), KD_SUCCESS);
  EXPECT_EQ(stats().hits, before.hits + 1) << "kd_gemm did not run the tuned kernel";
  const std::vector<float> got = download(c, mn, nullptr);
  EXPECT_EQ(test::count_wrong(got, h), 0) << "tuned kernel vs fp64";

  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const float beta = 0.f;
  KD_CU_CHECK(cu().cuMemsetD32(c_ref.ptr, kNaNBits, mn), "poison C_ref");
  ASSERT_EQ(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, shape_.m, shape_.n, shape_.k, &alpha,
                         a.get(), CUDA_R_32F, shape_.m, b.get(), CUDA_R_32F, shape_.k, &beta,
                         c_ref.get(), CUDA_R_32F, shape_.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> ref = download(c_ref, mn, nullptr);
  cublasDestroy(handle);
  EXPECT_EQ(test::count_wrong(ref, h), 0) << "cuBLAS vs fp64 (the tolerance is too tight)";
  std::int64_t differ = 0;
  for (std::size_t e = 0; e < mn; ++e)
    if (!(std::fabs(got[e] - ref[e]) <= 1e-5 * h.abs_sum[e] + 1e-6)) ++differ;
  EXPECT_EQ(differ, 0) << "tuned kernel vs cuBLAS";

  // The lower-level pair sees the same entry.
  const kd_gemm_desc desc = test::gemm_desc_for(shape_);
  const kd_entry* entry = nullptr;
  ASSERT_EQ(kd_gemm_lookup(&desc, nullptr, &entry, nullptr), KD_SUCCESS);
  kd_gemm_args args{};
  args.a = a.get();
  args.b = reinterpret_cast<const char*>(b.get()) + 4;  // misaligned for a 16-byte record
  args.c = c.get();
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  EXPECT_EQ(kd_gemm_launch(entry, &args, nullptr, &reason), KD_FALLBACK);
  EXPECT_EQ(reason, KD_FALLBACK_MISALIGNED);
}

TEST_F(CapiGemm, MissIsComputedByCublasBitForBit) {
  init();
  const std::int64_t m = 200, n = 72, k = 136;  // nothing cached for this shape
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  std::vector<float> ha(m * k), hb(k * n), hc(m * n);
  for (auto& x : ha) x = dist(rng);
  for (auto& x : hb) x = dist(rng);
  for (auto& x : hc) x = dist(rng);
  DeviceBuffer a(ha.size() * 4), b(hb.size() * 4), c(hc.size() * 4), c_ref(hc.size() * 4);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, ha.data(), ha.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, hb.data(), hb.size() * 4), "B");
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  struct Case {
    kd_op ta;
    kd_math math;
    cublasComputeType_t compute;
  };
  for (const Case cs : {Case{KD_OP_N, KD_MATH_DEFAULT, CUBLAS_COMPUTE_32F},
                        Case{KD_OP_T, KD_MATH_TF32_ALLOWED, CUBLAS_COMPUTE_32F_FAST_TF32}}) {
    const std::int64_t lda = cs.ta == KD_OP_N ? m : k;
    const float alpha = 1.25f, beta = 0.5f;  // beta != 0: C is read
    KD_CU_CHECK(cu().cuMemcpyHtoD(c.ptr, hc.data(), hc.size() * 4), "C");
    KD_CU_CHECK(cu().cuMemcpyHtoD(c_ref.ptr, hc.data(), hc.size() * 4), "C_ref");
    const kd_stats_t before = stats();
    ASSERT_EQ(kd_gemm(cs.ta, KD_OP_N, m, n, k, &alpha, a.get(), KD_DTYPE_F32, lda, b.get(),
                      KD_DTYPE_F32, k, &beta, c.get(), KD_DTYPE_F32, m, KD_COMPUTE_F32, cs.math,
                      nullptr),
              KD_SUCCESS);
    const kd_stats_t after = stats();
    EXPECT_EQ(after.hits, before.hits);
    EXPECT_EQ(after.misses, before.misses + 1);
    ASSERT_EQ(cublasGemmEx(handle, cs.ta == KD_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, m, n,
                           k, &alpha, a.get(), CUDA_R_32F, lda, b.get(), CUDA_R_32F, k, &beta,
                           c_ref.get(), CUDA_R_32F, m, cs.compute, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<float> got = download(c, hc.size(), nullptr);
    const std::vector<float> ref = download(c_ref, hc.size(), nullptr);
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * 4), 0)
        << "kd_gemm's miss differs from cuBLAS (ta=" << cs.ta << ")";
  }
  cublasDestroy(handle);
}

TEST_F(CapiGemm, HotSwapWhileEightThreadsLaunchKeepsEveryResultCorrect) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::plain, 1));
  }
  const Record second = test::make_gemm_record(key, shape_, test::KernelVariant::tiled, 2);
  init();
  const float alpha = 1.f;
  const test::HostGemm h = test::make_host_gemm(shape_, alpha, 3);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), warm(mn * 4);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, h.a.data(), h.a.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, h.b.data(), h.b.size() * 4), "B");
  ASSERT_TRUE(wait_for_hit(a, b, warm));

  constexpr int kThreads = 8;
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> calls{0}, failed{0}, wrong_results{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      try {
        KD_CU_CHECK(cu().cuCtxSetCurrent(ctx_), "thread context");
        CUstream stream = nullptr;
        KD_CU_CHECK(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
        DeviceBuffer c(mn * 4);
        while (!stop.load()) {
          KD_CU_CHECK(cu().cuMemsetD32Async(c.ptr, kNaNBits, mn, stream), "poison C");
          if (gemm(a, b, c, alpha, stream) != KD_SUCCESS) failed.fetch_add(1);
          if (test::count_wrong(download(c, mn, stream), h) != 0) wrong_results.fetch_add(1);
          calls.fetch_add(1);
        }
        cu().cuStreamDestroy(stream);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        failed.fetch_add(1);
      }
    });

  std::this_thread::sleep_for(300ms);
  const kd_stats_t before = stats();
  { CacheWriter(cache_).commit_record(second); }
  bool swapped = false;
  for (int i = 0; i < 500 && !swapped; ++i) {
    std::this_thread::sleep_for(10ms);
    swapped = stats().swaps > before.swaps;
  }
  std::this_thread::sleep_for(300ms);  // keep launching on the new entry
  stop.store(true);
  for (auto& t : threads) t.join();
  const kd_stats_t after = stats();

  EXPECT_TRUE(swapped) << "the second record was never swapped in";
  EXPECT_GT(calls.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong_results.load(), 0);
  EXPECT_GT(after.hits, before.hits);
  EXPECT_EQ(after.fallbacks[KD_FALLBACK_LAUNCH_FAILED], before.fallbacks[KD_FALLBACK_LAUNCH_FAILED]);
  std::printf("hot swap: %lld calls on %d threads, hits +%llu, swaps +%llu\n",
              static_cast<long long>(calls.load()), kThreads,
              static_cast<unsigned long long>(after.hits - before.hits),
              static_cast<unsigned long long>(after.swaps - before.swaps));
}

// A record with a workspace (two launches meeting in it, like split-K) under CUDA graph capture,
// with KD_GRAPH_WORKSPACE: each captured call takes a workspace of its own from its graph, so two
// graphs replayed concurrently on two streams, next to direct calls on the stream that owns the
// entry's workspace, all stay correct. Outside a capture, another stream still falls back
// (workspace_busy).
TEST_F(CapiGemm, WorkspaceRecordRunsInCapturedGraphsWithAWorkspaceOfItsOwn) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::split, 1));
  }
  init(KD_GRAPH_WORKSPACE);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  // Three problems with different inputs: a mixed-up workspace shows as wrong results.
  const float alpha = 1.f;
  std::vector<test::HostGemm> h;
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, c;
  for (unsigned p = 0; p < 3; ++p) {
    h.push_back(test::make_host_gemm(shape_, alpha, 11 + p));
    a.push_back(std::make_unique<DeviceBuffer>(h[p].a.size() * 4));
    b.push_back(std::make_unique<DeviceBuffer>(h[p].b.size() * 4));
    c.push_back(std::make_unique<DeviceBuffer>(mn * 4));
    KD_CU_CHECK(cu().cuMemcpyHtoD(a[p]->ptr, h[p].a.data(), h[p].a.size() * 4), "A");
    KD_CU_CHECK(cu().cuMemcpyHtoD(b[p]->ptr, h[p].b.data(), h[p].b.size() * 4), "B");
  }
  // The first hit is on the null stream, which then owns the entry's workspace.
  ASSERT_TRUE(wait_for_hit(*a[0], *b[0], *c[0])) << "the record never loaded: " << stats().load_failures
                                                 << " load failures";
  std::array<CUstream, 2> streams{};
  for (CUstream& s : streams) KD_CU_CHECK(cu().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "stream");

  kd_stats_t before = stats();
  ASSERT_EQ(gemm(*a[1], *b[1], *c[1], alpha, streams[0]), KD_SUCCESS);  // cuBLAS: not the owner
  EXPECT_EQ(test::count_wrong(download(*c[1], mn, streams[0]), h[1]), 0);
  EXPECT_EQ(stats().fallbacks[KD_FALLBACK_WORKSPACE_BUSY], before.fallbacks[KD_FALLBACK_WORKSPACE_BUSY] + 1);

  before = stats();
  std::array<CUgraphExec, 2> execs{};
  for (std::size_t g = 0; g < 2; ++g) {
    KD_CU_CHECK(cu().cuStreamBeginCapture(streams[g], CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
    const int rc = gemm(*a[g + 1], *b[g + 1], *c[g + 1], alpha, streams[g]);
    CUgraph graph = nullptr;
    KD_CU_CHECK(cu().cuStreamEndCapture(streams[g], &graph), "end capture");
    ASSERT_EQ(rc, KD_SUCCESS);
    KD_CU_CHECK(cu().cuGraphInstantiate(&execs[g], graph, 0), "instantiate");
    KD_CU_CHECK(cu().cuGraphDestroy(graph), "graph");
  }
  const kd_stats_t captured = stats();
  EXPECT_EQ(captured.hits, before.hits + 2) << "the captures did not take the tuned kernels";
  EXPECT_EQ(captured.fallbacks[KD_FALLBACK_CAPTURING], before.fallbacks[KD_FALLBACK_CAPTURING]);

  int wrong = 0;
  for (int round = 0; round < 20; ++round) {
    for (std::size_t g = 0; g < 2; ++g) {
      KD_CU_CHECK(cu().cuMemsetD32Async(c[g + 1]->ptr, kNaNBits, mn, streams[g]), "poison C");
      KD_CU_CHECK(cu().cuGraphLaunch(execs[g], streams[g]), "replay");
    }
    KD_CU_CHECK(cu().cuMemsetD32Async(c[0]->ptr, kNaNBits, mn, nullptr), "poison C");
    ASSERT_EQ(gemm(*a[0], *b[0], *c[0], alpha, nullptr), KD_SUCCESS);
    wrong += test::count_wrong(download(*c[0], mn, nullptr), h[0]) != 0;
    for (std::size_t g = 0; g < 2; ++g) wrong += test::count_wrong(download(*c[g + 1], mn, streams[g]), h[g + 1]) != 0;
  }
  EXPECT_EQ(wrong, 0) << "results mixed up between the graphs and the direct calls";
  EXPECT_EQ(stats().hits, captured.hits + 20);
  for (std::size_t g = 0; g < 2; ++g) {
    cu().cuGraphExecDestroy(execs[g]);
    cu().cuStreamDestroy(streams[g]);
  }
}

// Without KD_GRAPH_WORKSPACE a captured call to a record with a workspace falls back to cuBLAS
// (counted as capturing), and the graph it leaves replays correctly.
TEST_F(CapiGemm, WorkspaceRecordFallsBackUnderCaptureByDefault) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::split, 1));
  }
  init();
  const float alpha = 1.f;
  const test::HostGemm h = test::make_host_gemm(shape_, alpha, 21);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), c(mn * 4);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, h.a.data(), h.a.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, h.b.data(), h.b.size() * 4), "B");
  ASSERT_TRUE(wait_for_hit(a, b, c));
  CUstream stream = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
  const kd_stats_t before = stats();
  KD_CU_CHECK(cu().cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
  const int rc = gemm(a, b, c, alpha, stream);
  CUgraph graph = nullptr;
  KD_CU_CHECK(cu().cuStreamEndCapture(stream, &graph), "end capture");
  ASSERT_EQ(rc, KD_SUCCESS);
  const kd_stats_t after = stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.fallbacks[KD_FALLBACK_CAPTURING], before.fallbacks[KD_FALLBACK_CAPTURING] + 1);
  CUgraphExec exec = nullptr;
  KD_CU_CHECK(cu().cuGraphInstantiate(&exec, graph, 0), "instantiate");
  KD_CU_CHECK(cu().cuMemsetD32Async(c.ptr, kNaNBits, mn, stream), "poison C");
  KD_CU_CHECK(cu().cuGraphLaunch(exec, stream), "replay");
  EXPECT_EQ(test::count_wrong(download(c, mn, stream), h), 0);
  cu().cuGraphExecDestroy(exec);
  cu().cuGraphDestroy(graph);
  cu().cuStreamDestroy(stream);
}

// The way the cuBLAS shim calls: kd_gemm_lookup, then kd_gemm_launch_with_workspace lending the
// handle's workspace. A record whose first launch depends on the previous kernel (and whose second
// depends on the first) runs in a captured graph with the lent workspace, without memory nodes, so
// the graph may be cloned and nested as a child graph; every replay is correct.
TEST_F(CapiGemm, LentWorkspaceServesCapturedCallsInClonedAndNestedGraphs) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::split_dependent, 1));
  }
  init();
  const float alpha = 1.25f;
  const test::HostGemm h = test::make_host_gemm(shape_, alpha, 31);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), c(mn * 4), workspace(32u << 20);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, h.a.data(), h.a.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, h.b.data(), h.b.size() * 4), "B");
  ASSERT_TRUE(wait_for_hit(a, b, c));

  const kd_gemm_desc desc = test::gemm_desc_for(shape_);
  const kd_gemm_args args = test::gemm_args_for(shape_, a.get(), b.get(), c.get(), alpha);

  CUstream stream = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
  const kd_stats_t before = stats();
  KD_CU_CHECK(cu().cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
  // A memset before the dependent first launch: what precedes it need not be a kernel.
  KD_CU_CHECK(cu().cuMemsetD32Async(c.ptr, kNaNBits, mn, stream), "poison C");
  const kd_entry* entry = nullptr;
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  int rc = kd_gemm_lookup(&desc, stream, &entry, &reason);
  if (rc == KD_SUCCESS) rc = kd_gemm_launch_with_workspace(entry, &args, workspace.get(), 32u << 20, stream, &reason);
  CUgraph graph = nullptr;
  KD_CU_CHECK(cu().cuStreamEndCapture(stream, &graph), "end capture");
  ASSERT_EQ(rc, KD_SUCCESS) << "fell back: " << kd_fallback_reason_name(reason);
  EXPECT_EQ(stats().hits, before.hits + 1);

  CUgraph clone = nullptr, parent = nullptr;
  KD_CU_CHECK(cu().cuGraphClone(&clone, graph), "clone a graph with the tuned kernel");
  KD_CU_CHECK(cu().cuGraphCreate(&parent, 0), "parent graph");
  CUgraphNode child = nullptr;
  KD_CU_CHECK(cu().cuGraphAddChildGraphNode(&child, parent, nullptr, 0, graph), "nest it as a child graph");
  for (CUgraph g : {graph, clone, parent}) {
    CUgraphExec exec = nullptr;
    KD_CU_CHECK(cu().cuGraphInstantiate(&exec, g, 0), "instantiate");
    for (int round = 0; round < 3; ++round) {
      KD_CU_CHECK(cu().cuGraphLaunch(exec, stream), "replay");
      EXPECT_EQ(test::count_wrong(download(c, mn, stream), h), 0) << "replay " << round;
    }
    cu().cuGraphExecDestroy(exec);
  }
  for (CUgraph g : {parent, clone, graph}) cu().cuGraphDestroy(g);
  cu().cuStreamDestroy(stream);
}

// A lent workspace smaller than the record needs cannot serve a captured call: it falls back,
// counted as workspace_too_small, and the capture stays valid.
TEST_F(CapiGemm, TooSmallLentWorkspaceFallsBackUnderCapture) {
  const GemmKey key = test::gemm_key_for(shape_, /*beta_zero=*/true);
  {
    CacheWriter w(cache_);
    w.commit_record(test::make_gemm_record(key, shape_, test::KernelVariant::split, 1));
  }
  init();
  const test::HostGemm h = test::make_host_gemm(shape_, 1.f, 41);
  const std::size_t mn = static_cast<std::size_t>(shape_.m * shape_.n);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), c(mn * 4), workspace(4096);
  KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, h.a.data(), h.a.size() * 4), "A");
  KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, h.b.data(), h.b.size() * 4), "B");
  ASSERT_TRUE(wait_for_hit(a, b, c));
  const kd_gemm_desc desc = test::gemm_desc_for(shape_);
  const kd_gemm_args args = test::gemm_args_for(shape_, a.get(), b.get(), c.get(), 1.f);
  CUstream stream = nullptr;
  KD_CU_CHECK(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
  const kd_stats_t before = stats();
  KD_CU_CHECK(cu().cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
  const kd_entry* entry = nullptr;
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  int rc = kd_gemm_lookup(&desc, stream, &entry, &reason);
  if (rc == KD_SUCCESS) rc = kd_gemm_launch_with_workspace(entry, &args, workspace.get(), 4096, stream, &reason);
  CUgraph graph = nullptr;
  KD_CU_CHECK(cu().cuStreamEndCapture(stream, &graph), "end capture: the fallback left the capture valid");
  EXPECT_EQ(rc, KD_FALLBACK);
  EXPECT_EQ(reason, KD_FALLBACK_WORKSPACE_TOO_SMALL);
  EXPECT_EQ(stats().fallbacks[KD_FALLBACK_WORKSPACE_TOO_SMALL], before.fallbacks[KD_FALLBACK_WORKSPACE_TOO_SMALL] + 1);
  CUgraphExec exec = nullptr;
  KD_CU_CHECK(cu().cuGraphInstantiate(&exec, graph, 0), "instantiate");
  cu().cuGraphExecDestroy(exec);
  cu().cuGraphDestroy(graph);
  cu().cuStreamDestroy(stream);
}

}  // namespace
}  // namespace kd
