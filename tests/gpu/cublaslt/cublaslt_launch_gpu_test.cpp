// A published cublaslt_algo record in an application: a cuBLASLt search (gate only, no timing)
// through the real worker, its best correct algorithm (preferring one that needs a workspace, to
// exercise it) stored with make_record, then kd_gemm in this process loads it on the background
// thread and launches it through cublasLtMatmul. The result must be as close to an fp64 reference
// as cuBLAS's own (the precision class), and a pointer below the record's 256-byte alignment must
// fall back.
#include <gtest/gtest.h>

#include <cublas_v2.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cublaslt_gpu_common.hpp"
#include "cuda/driver.hpp"
#include "driver/winner_record.hpp"
#include "kdispatch/kdispatch.h"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;

using test::DeviceBuffer;

kd_stats_t stats() {
  kd_stats_t s{};
  EXPECT_EQ(kd_stats(&s), KD_SUCCESS);
  return s;
}

kd_dtype kd_type(DType t) { return t == DType::f32 ? KD_DTYPE_F32 : t == DType::bf16 ? KD_DTYPE_BF16 : KD_DTYPE_F16; }
cudaDataType_t cuda_type(DType t) { return t == DType::f32 ? CUDA_R_32F : t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F; }

// Host values of one element type, stored as bytes (bf16 is the top half of an f32).
struct HostMatrix {
  DType type;
  std::vector<double> values;  // what the device holds, exactly
  std::vector<unsigned char> bytes;
};

HostMatrix random_matrix(DType type, std::size_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  HostMatrix m{type, std::vector<double>(count), std::vector<unsigned char>(count * dtype_bytes(type))};
  for (std::size_t i = 0; i < count; ++i) {
    float v = dist(rng);
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (type == DType::bf16) {
      bits &= 0xFFFF0000u;  // truncate: an exact bf16 value
      std::memcpy(&v, &bits, 4);
      const std::uint16_t half = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(&m.bytes[i * 2], &half, 2);
    } else {
      std::memcpy(&m.bytes[i * 4], &v, 4);
    }
    m.values[i] = v;
  }
  return m;
}

std::vector<double> download(const DeviceBuffer& c, DType type, std::size_t count) {
  KD_CU_CHECK(cu().cuCtxSynchronize(), "gemm");
  std::vector<unsigned char> bytes(count * dtype_bytes(type));
  KD_CU_CHECK(cu().cuMemcpyDtoH(bytes.data(), c.ptr, bytes.size()), "C");
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    float v;
    if (type == DType::bf16) {
      const std::uint32_t bits = static_cast<std::uint32_t>(bytes[i * 2] | (bytes[i * 2 + 1] << 8)) << 16;
      std::memcpy(&v, &bits, 4);
    } else {
      std::memcpy(&v, &bytes[i * 4], 4);
    }
    out[i] = v;
  }
  return out;
}

// max over elements of |x - ref| / (sum_l |a||b|): error in units of the element's scale.
double scaled_error(const std::vector<double>& x, const std::vector<double>& ref, const std::vector<double>& scale) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::isfinite(x[i]) ? std::fabs(x[i] - ref[i]) / scale[i] : INFINITY;
    worst = std::max(worst, e);
  }
  return worst;
}

// The correct node to publish: one with a workspace when there is one, else the fastest.
int pick_node(const search::SearchOutcome& out) {
  int pick = -1;
  for (const search::Node& n : out.tree.nodes()) {
    if (!n.correct() || !n.cublaslt) continue;
    if (pick < 0 || (n.cublaslt->workspace_bytes > 0 && out.tree.node(pick).cublaslt->workspace_bytes == 0)) pick = n.id;
  }
  return pick;
}

TEST(CublasLtLaunchOnGpu, PublishedRecordRunsThroughKdGemmWithinThePrecisionClassOfCublas) {
  KD_REQUIRE_GPU();
  test::TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const std::vector<GemmKey> keys = test::cublaslt_test_keys();
  std::vector<std::string> published_ideas;
  {
    CacheWriter writer(cache);
    for (const GemmKey& key : keys) {
      const search::SearchOutcome out = test::cublaslt_search(key, cache, eval::Timing::skip);
      const int id = pick_node(out);
      ASSERT_GE(id, 0) << "no correct cuBLASLt algorithm for " << key.shape_line();
      const Record r = search::make_record(out, id, key.full_line(), {search::nvrtc_version(), cu().driver_version, 0});
      ASSERT_EQ(r.kind, RecordKind::cublaslt_algo);
      writer.commit_record(r);
      published_ideas.push_back(r.idea);
      std::printf("published for %s: %s (cuBLASLt %d, workspace %llu bytes)\n", key.shape_line().c_str(),
                  r.idea.c_str(), r.cublas_version, static_cast<unsigned long long>(r.plan.workspace_bytes));
    }
  }

  kd_options o{};
  o.cache_dir = cache.c_str();
  o.flags = KD_NO_DAEMON;
  o.poll_interval_ms = 50;
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  std::mt19937 rng(11);
  for (std::size_t ki = 0; ki < keys.size(); ++ki) {
    const GemmKey& key = keys[ki];
    SCOPED_TRACE(key.shape_line());
    const std::size_t m = key.m, n = key.n, k = key.k;
    const HostMatrix a = random_matrix(key.a, k * m, rng), b = random_matrix(key.b, k * n, rng);
    DeviceBuffer da(a.bytes.size()), db(b.bytes.size()), dc(m * n * dtype_bytes(key.c)), dref(m * n * dtype_bytes(key.c));
    KD_CU_CHECK(cu().cuMemcpyHtoD(da.ptr, a.bytes.data(), a.bytes.size()), "A");
    KD_CU_CHECK(cu().cuMemcpyHtoD(db.ptr, b.bytes.data(), b.bytes.size()), "B");
    const float alpha = 1.0f, beta = 0.0f;
    const auto gemm = [&](const DeviceBuffer& c) {
      return kd_gemm(KD_OP_T, KD_OP_N, key.m, key.n, key.k, &alpha, da.get(), kd_type(key.a), key.lda, db.get(),
                     kd_type(key.b), key.ldb, &beta, c.get(), kd_type(key.c), key.ldc, KD_COMPUTE_F32, KD_MATH_DEFAULT,
                     nullptr);
    };
    bool hit = false;
    for (int i = 0; i < 1000 && !hit; ++i) {
      const std::uint64_t before = stats().hits;
      ASSERT_EQ(gemm(dc), KD_SUCCESS);
      hit = stats().hits > before;
      if (!hit) std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(hit) << "the cuBLASLt record never loaded: " << stats().load_failures << " load failures";

    KD_CU_CHECK(cu().cuMemsetD8(dc.ptr, 0xFF, m * n * dtype_bytes(key.c)), "poison C");  // NaN in f32 and bf16
    const kd_stats_t before = stats();
    ASSERT_EQ(gemm(dc), KD_SUCCESS);
    EXPECT_EQ(stats().hits, before.hits + 1) << "kd_gemm did not run the cuBLASLt entry";
    const std::vector<double> got = download(dc, key.c, m * n);
    ASSERT_EQ(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, key.m, key.n, key.k, &alpha, da.get(), cuda_type(key.a),
                           key.lda, db.get(), cuda_type(key.b), key.ldb, &beta, dref.get(), cuda_type(key.c), key.ldc,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<double> vendor = download(dref, key.c, m * n);

    std::vector<double> ref(m * n), scale(m * n);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < m; ++i) {
        double acc = 0, abs = 0;
        for (std::size_t l = 0; l < k; ++l) {
          const double x = a.values[l + i * k] * b.values[l + j * k];
          acc += x;
          abs += std::fabs(x);
        }
        ref[i + j * m] = acc;
        scale[i + j * m] = abs;
      }
    const double err_kd = scaled_error(got, ref, scale), err_vendor = scaled_error(vendor, ref, scale);
    std::printf("%s via %s: error %.3g (cuBLAS %.3g) in units of sum|a||b|\n", key.shape_line().c_str(),
                published_ideas[ki].c_str(), err_kd, err_vendor);
    EXPECT_LE(err_kd, 2 * err_vendor + 1e-7) << "outside the precision class of cuBLAS";

    // Below the record's 256-byte alignment: the entry refuses, the caller falls back.
    kd_gemm_desc desc{};
    desc.ta = KD_OP_T;
    desc.tb = KD_OP_N;
    desc.m = key.m, desc.n = key.n, desc.k = key.k;
    desc.lda = key.lda, desc.ldb = key.ldb, desc.ldc = key.ldc;
    desc.batch = 1;
    desc.a_type = kd_type(key.a), desc.b_type = kd_type(key.b), desc.c_type = kd_type(key.c);
    desc.compute = KD_COMPUTE_F32;
    desc.beta_zero = 1;
    const kd_entry* entry = nullptr;
    ASSERT_EQ(kd_gemm_lookup(&desc, nullptr, &entry, nullptr), KD_SUCCESS);
    kd_gemm_args args{};
    args.a = da.get();
    args.b = static_cast<const char*>(db.get()) + 128;
    args.c = dc.get();
    args.alpha = 1.0f;
    kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
    EXPECT_EQ(kd_gemm_launch(entry, &args, nullptr, &reason), KD_FALLBACK);
    EXPECT_EQ(reason, KD_FALLBACK_MISALIGNED);
  }
  cublasDestroy(handle);
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
}

}  // namespace
}  // namespace kd
