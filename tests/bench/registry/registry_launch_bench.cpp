// Host cost of a hit through the C API (kd_gemm_lookup + kd_gemm_launch, and kd_gemm) against a
// bare cuLaunchKernel of the same kernel on the same stream, and of a miss (lookup + report).
// Targets (issue 3): under 50 ns added on a hit, under 200 ns for a miss.
// Every variant synchronizes the stream every kSyncEvery launches so the launch queue never fills;
// compare BM_KdLookupLaunch with BM_BareLaunch, and read BM_KdLookupRelease (no launch) directly.
// Launches that execute are bound by the GPU (the loop runs at the kernel's pace), so the pair
// cannot separate kdispatch's host cost; BM_KdLookupRelease measures it. (Launching into a stream
// capture instead was tried: its cost drifts with the capture's size, 296-611 ns between runs.)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "gemm_fixture.hpp"
#include "kdispatch/kdispatch.h"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

constexpr int kSyncEvery = 256;
const test::GemmShape kShape{64, 64, 64};

struct Bench {
  test::TempDir dir;
  std::string cache;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  Record record;
  CUdeviceptr a = 0, b = 0, c = 0;
  kd_gemm_desc desc{};
  kd_gemm_desc miss_desc{};
  kd_gemm_args args{};
};
Bench* g = nullptr;

void setup() {
  g = new Bench();
  const CudaDriver& d = cu();
  CUdevice dev = 0;
  KD_CU_CHECK(d.cuDeviceGet(&dev, 0), "device 0");
  KD_CU_CHECK(d.cuDevicePrimaryCtxRetain(&g->ctx, dev), "primary context");
  KD_CU_CHECK(d.cuCtxSetCurrent(g->ctx), "primary context");
  KD_CU_CHECK(d.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "stream");
  const GemmKey key = test::gemm_key_for(kShape, true);
  g->record = test::make_gemm_record(key, kShape, test::KernelVariant::plain, 1);
  g->cache = (g->dir.path() / "cache").string();
  CacheWriter(g->cache).commit_record(g->record);
  KD_CU_CHECK(d.cuModuleLoadData(&g->module, g->record.cubin.data()), "bare module");
  KD_CU_CHECK(d.cuModuleGetFunction(&g->fn, g->module, "kd_gemm_plain"), "bare function");
  const std::size_t bytes = static_cast<std::size_t>(kShape.m * kShape.k) * 4;
  KD_CU_CHECK(d.cuMemAlloc(&g->a, bytes), "A");
  KD_CU_CHECK(d.cuMemAlloc(&g->b, bytes), "B");
  KD_CU_CHECK(d.cuMemAlloc(&g->c, bytes), "C");
  KD_CU_CHECK(d.cuMemsetD32(g->a, 0, bytes / 4), "A");
  KD_CU_CHECK(d.cuMemsetD32(g->b, 0, bytes / 4), "B");

  g->desc = test::gemm_desc_for(kShape);
  g->miss_desc = g->desc;
  g->miss_desc.m = 63;
  g->miss_desc.lda = g->miss_desc.ldc = 63;
  g->args = test::gemm_args_for(kShape, reinterpret_cast<const void*>(g->a), reinterpret_cast<const void*>(g->b),
                               reinterpret_cast<void*>(g->c), 1.f);

  kd_options o{};
  o.cache_dir = g->cache.c_str();
  o.flags = KD_NO_DAEMON;
  if (kd_init(&o) != KD_SUCCESS) throw std::runtime_error("kd_init failed");
  for (int i = 0; i < 1000; ++i) {  // wait for the background thread to load the record
    const kd_entry* e = nullptr;
    if (kd_gemm_lookup(&g->desc, g->stream, &e, nullptr) == KD_SUCCESS) {
      kd_gemm_release(e);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("record never loaded");
}

void sync_now_and_then(std::int64_t i) {
  if (i % kSyncEvery == 0) cu().cuStreamSynchronize(g->stream);
}

void BM_BareLaunch(benchmark::State& state) {
  const std::uint32_t gx = static_cast<std::uint32_t>((kShape.m + 15) / 16);
  const std::uint32_t gy = static_cast<std::uint32_t>((kShape.n + 15) / 16);
  std::int64_t i = 0;
  for (auto _ : state) {
    kd_gemm_args args = g->args;
    void* params[] = {&args};
    cu().cuLaunchKernel(g->fn, gx, gy, 1, 16, 16, 1, 0, g->stream, params, nullptr);
    sync_now_and_then(++i);
  }
  cu().cuStreamSynchronize(g->stream);
}
BENCHMARK(BM_BareLaunch);

void BM_KdLookupLaunch(benchmark::State& state) {
  std::int64_t i = 0;
  for (auto _ : state) {
    const kd_entry* e = nullptr;
    if (kd_gemm_lookup(&g->desc, g->stream, &e, nullptr) == KD_SUCCESS)
      kd_gemm_launch(e, &g->args, g->stream, nullptr);
    else
      state.SkipWithError("miss on the cached shape");
    sync_now_and_then(++i);
  }
  cu().cuStreamSynchronize(g->stream);
}
BENCHMARK(BM_KdLookupLaunch);

void BM_KdGemmHit(benchmark::State& state) {
  const float alpha = 1.f, beta = 0.f;
  std::int64_t i = 0;
  for (auto _ : state) {
    kd_gemm(KD_OP_N, KD_OP_N, kShape.m, kShape.n, kShape.k, &alpha, g->args.a, KD_DTYPE_F32,
            kShape.m, g->args.b, KD_DTYPE_F32, kShape.k, &beta, g->args.c, KD_DTYPE_F32, kShape.m,
            KD_COMPUTE_F32, KD_MATH_DEFAULT, g->stream);
    sync_now_and_then(++i);
  }
  cu().cuStreamSynchronize(g->stream);
}
BENCHMARK(BM_KdGemmHit);

// The added host cost of a hit without the launch itself.
void BM_KdLookupRelease(benchmark::State& state) {
  for (auto _ : state) {
    const kd_entry* e = nullptr;
    if (kd_gemm_lookup(&g->desc, g->stream, &e, nullptr) == KD_SUCCESS) kd_gemm_release(e);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_KdLookupRelease);

// The driver calls a hit path could be built on, for scale.
void BM_CuStreamGetCtx(benchmark::State& state) {
  for (auto _ : state) {
    CUcontext ctx = nullptr;
    cu().cuStreamGetCtx(g->stream, &ctx);
    benchmark::DoNotOptimize(ctx);
  }
}
BENCHMARK(BM_CuStreamGetCtx);

void BM_CuCtxGetCurrent(benchmark::State& state) {
  for (auto _ : state) {
    CUcontext ctx = nullptr;
    cu().cuCtxGetCurrent(&ctx);
    benchmark::DoNotOptimize(ctx);
  }
}
BENCHMARK(BM_CuCtxGetCurrent);

// A miss: lookup + (first time) report; later calls find the negative entry.
void BM_KdMissLookup(benchmark::State& state) {
  for (auto _ : state) {
    const kd_entry* e = nullptr;
    benchmark::DoNotOptimize(kd_gemm_lookup(&g->miss_desc, g->stream, &e, nullptr));
  }
}
BENCHMARK(BM_KdMissLookup);

}  // namespace
}  // namespace kd

int main(int argc, char** argv) {
  if (kd::cu_device_count() == 0) {
    std::printf("bench_registry_launch: no GPU (%s); nothing to measure\n",
                kd::cu_unavailable_reason().c_str());
    return 0;
  }
  try {
    kd::setup();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_registry_launch: setup failed: %s\n", e.what());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  kd_shutdown();
  return 0;
}
