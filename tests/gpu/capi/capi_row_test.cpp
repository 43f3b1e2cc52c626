// kd_row on a GPU (issue 33): a builtin row_reduce kernel compiled by NVRTC, stored as the daemon
// stores a winner (an nvrtc_kernel record under the row key's full line), loaded by the background
// thread and launched by kd_row and by the kd_row_lookup/kd_row_launch pair; its output checked
// against an fp64 reference; misaligned pointers fall back; a loaded entry launches under stream
// capture and the replayed graph computes the same rows.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "builtin/row_family.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "kdispatch/kdispatch.h"
#include "key/row_key.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;
using test::DeviceBuffer;

constexpr std::uint32_t kNaNBits = 0x7fc00000u;
constexpr float kEps = 1e-5f;

kd_stats_t stats() {
  kd_stats_t s{};
  EXPECT_EQ(kd_stats(&s), KD_SUCCESS);
  return s;
}

// layernorm f32, 300 rows of 1000 with weight and bias: a row of fewer columns than the block has
// threads' worth of 4-element accesses, and a row count no block size divides.
RowShape test_shape() {
  RowShape s;
  s.op = RowOp::layernorm;
  s.dtype = DType::f32;
  s.rows = 300;
  s.cols = 1000;
  s.weight = true;
  s.bias = true;
  return s;
}

// The record the daemon would commit for the family's first seed.
Record make_row_record(const RowShape& shape) {
  const DeviceInfo dev = query_device(0);
  const builtin::Target target = builtin::Target::from(dev);
  const std::vector<builtin::Params> seeds = builtin::row_seeds(shape, target);
  if (seeds.empty()) throw std::runtime_error("row_reduce has no seed for the test shape");
  const std::string source = builtin::row_render(shape, target, seeds.front());
  const search::CompileOutput out = search::compile_cuda({.source = source, .name = "row_reduce.cu", .arch = dev.arch});
  if (out.status != search::CompileStatus::ok) throw std::runtime_error("NVRTC: " + out.log);
  Record r;
  r.key_line = RowKey{shape, DevicePart{dev.arch, dev.name, dev.sms}}.full_line();
  r.kind = RecordKind::nvrtc_kernel;
  r.cubin = out.cubin;
  r.ptx = out.ptx;
  r.source = source;
  r.plan = builtin::row_plan(shape, target, seeds.front());
  r.alignment_bytes = static_cast<std::uint32_t>(builtin::kRowAlignmentBytes);
  r.proposer = "builtin";
  r.driver_version = cu().driver_version;
  r.created_unix_s = 1;
  return r;
}

struct HostRows {
  std::vector<float> x, weight, bias;
  std::vector<double> ref;
};

HostRows make_host_rows(const RowShape& s, unsigned seed) {
  HostRows h;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  const auto n = static_cast<std::size_t>(s.rows * s.cols), cols = static_cast<std::size_t>(s.cols);
  h.x.resize(n);
  h.weight.resize(cols);
  h.bias.resize(cols);
  for (auto& v : h.x) v = 3.f + dist(rng);
  for (auto& v : h.weight) v = 1.f + 0.1f * dist(rng);
  for (auto& v : h.bias) v = 0.1f * dist(rng);
  h.ref.resize(n);
  for (std::size_t r = 0; r < static_cast<std::size_t>(s.rows); ++r) {
    const float* row = &h.x[r * cols];
    double mean = 0, var = 0;
    for (std::size_t c = 0; c < cols; ++c) mean += row[c];
    mean /= static_cast<double>(cols);
    for (std::size_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + kEps);
    for (std::size_t c = 0; c < cols; ++c) h.ref[r * cols + c] = (row[c] - mean) * rstd * h.weight[c] + h.bias[c];
  }
  return h;
}

// Elements farther from the fp64 reference than f32 arithmetic allows (NaN counts).
std::int64_t count_wrong(const std::vector<float>& y, const HostRows& h) {
  std::int64_t wrong = 0;
  for (std::size_t e = 0; e < y.size(); ++e)
    if (!(std::fabs(static_cast<double>(y[e]) - h.ref[e]) <= 1e-4 * (1.0 + std::fabs(h.ref[e])))) ++wrong;
  return wrong;
}

class CapiRow : public ::testing::Test {
protected:
  void SetUp() override {
    KD_REQUIRE_GPU();
    cache_ = (dir_.path() / "cache").string();
    { CacheWriter(cache_).commit_record(make_row_record(shape_)); }
    kd_options o{};
    o.cache_dir = cache_.c_str();
    o.flags = KD_NO_DAEMON;
    o.poll_interval_ms = 50;
    ASSERT_EQ(kd_init(&o), KD_SUCCESS);
    initialized_ = true;
    const std::size_t n = h_.x.size() * 4, cols = h_.weight.size() * 4;
    x_ = std::make_unique<DeviceBuffer>(n + 16);
    y_ = std::make_unique<DeviceBuffer>(n + 16);
    w_ = std::make_unique<DeviceBuffer>(cols);
    b_ = std::make_unique<DeviceBuffer>(cols);
    KD_CU_CHECK(cu().cuMemcpyHtoD(x_->ptr, h_.x.data(), n), "x");
    KD_CU_CHECK(cu().cuMemcpyHtoD(w_->ptr, h_.weight.data(), cols), "weight");
    KD_CU_CHECK(cu().cuMemcpyHtoD(b_->ptr, h_.bias.data(), cols), "bias");
  }
  void TearDown() override {
    x_.reset();
    y_.reset();
    w_.reset();
    b_.reset();
    if (initialized_) {
      EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
    }
  }
  int row(CUstream stream, kd_fallback_reason* reason = nullptr, std::uintptr_t x_offset = 0) const {
    return kd_row(&desc_, reinterpret_cast<const char*>(x_->get()) + x_offset, w_->get(), b_->get(), y_->get(), kEps,
                  stream, reason);
  }
  // Calls kd_row until a call is a hit (the background thread loaded the record), at most 10 s.
  bool wait_for_hit() {
    for (int i = 0; i < 1000; ++i) {
      if (row(nullptr) == KD_SUCCESS) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  void poison_y() const { KD_CU_CHECK(cu().cuMemsetD32(y_->ptr, kNaNBits, h_.x.size()), "poison y"); }
  std::vector<float> download_y(CUstream stream) const {
    std::vector<float> out(h_.x.size());
    KD_CU_CHECK(cu().cuStreamSynchronize(stream), "row op");
    KD_CU_CHECK(cu().cuMemcpyDtoH(out.data(), y_->ptr, out.size() * 4), "y");
    return out;
  }

  test::TempDir dir_;
  std::string cache_;
  bool initialized_ = false;
  RowShape shape_ = test_shape();
  kd_row_desc desc_{KD_ROW_LAYERNORM, KD_DTYPE_F32, test_shape().rows, test_shape().cols, 1, 1};
  HostRows h_ = make_host_rows(test_shape(), 7);
  std::unique_ptr<DeviceBuffer> x_, y_, w_, b_;
};

TEST_F(CapiRow, StoredRecordIsLoadedLaunchedAndMatchesTheReference) {
  ASSERT_TRUE(wait_for_hit()) << "the record never loaded: " << stats().load_failures << " load failures";
  poison_y();
  const kd_stats_t before = stats();
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  ASSERT_EQ(row(nullptr, &reason), KD_SUCCESS);
  EXPECT_EQ(stats().hits, before.hits + 1);
  EXPECT_EQ(count_wrong(download_y(nullptr), h_), 0) << "tuned kernel vs fp64";

  // The lower-level pair sees the same entry.
  const kd_entry* entry = nullptr;
  ASSERT_EQ(kd_row_lookup(&desc_, nullptr, &entry, nullptr), KD_SUCCESS);
  kd_row_args args{};
  args.x = x_->get();
  args.weight = w_->get();
  args.bias = b_->get();
  args.y = y_->get();
  args.rows = desc_.rows;
  args.cols = desc_.cols;
  args.eps = kEps;
  poison_y();
  ASSERT_EQ(kd_row_launch(entry, &args, nullptr, &reason), KD_SUCCESS);
  EXPECT_EQ(count_wrong(download_y(nullptr), h_), 0) << "kd_row_launch vs fp64";

  // Another shape of the same op has no record: a miss, not this entry.
  kd_row_desc other = desc_;
  other.rows = 299;
  EXPECT_EQ(kd_row_lookup(&other, nullptr, &entry, &reason), KD_FALLBACK);
  EXPECT_EQ(kd_fallback_reason_is_miss(reason), 1) << kd_fallback_reason_name(reason);
}

TEST_F(CapiRow, MisalignedPointersFallBack) {
  ASSERT_TRUE(wait_for_hit());
  const kd_stats_t before = stats();
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  EXPECT_EQ(row(nullptr, &reason, /*x_offset=*/4), KD_FALLBACK);
  EXPECT_EQ(reason, KD_FALLBACK_MISALIGNED);
  const kd_stats_t after = stats();
  EXPECT_EQ(after.fallbacks[KD_FALLBACK_MISALIGNED], before.fallbacks[KD_FALLBACK_MISALIGNED] + 1);
  EXPECT_EQ(after.misses, before.misses) << "a launch-stage fallback is not a miss";
}

TEST_F(CapiRow, LoadedEntryLaunchesUnderStreamCapture) {
  ASSERT_TRUE(wait_for_hit());
  const CudaDriver& d = cu();
  CUstream stream = nullptr;
  KD_CU_CHECK(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "stream");
  poison_y();
  KD_CU_CHECK(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
  const int rc = row(stream);
  CUgraph graph = nullptr;
  KD_CU_CHECK(d.cuStreamEndCapture(stream, &graph), "end capture");
  ASSERT_EQ(rc, KD_SUCCESS) << "a loaded entry launches under capture";
  CUgraphExec exec = nullptr;
  KD_CU_CHECK(d.cuGraphInstantiate(&exec, graph, 0), "instantiate");
  KD_CU_CHECK(d.cuGraphLaunch(exec, stream), "replay");
  EXPECT_EQ(count_wrong(download_y(stream), h_), 0) << "replayed graph vs fp64";
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  d.cuStreamDestroy(stream);
}

}  // namespace
}  // namespace kd
