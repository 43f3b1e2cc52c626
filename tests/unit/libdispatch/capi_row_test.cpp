// The C API's row operators (issue 33) without a GPU: descriptions checked and refused by name, the
// shape line, the one-call form falling back (no_gpu here) and counted as a miss like a GEMM's, the
// lower-level pair's argument checks. (GPU behaviour: tests/gpu/capi/capi_row_test.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kdispatch/kdispatch.h"
#include "support/temp_dir.hpp"

namespace {

kd_row_desc layernorm_desc() {
  kd_row_desc d{};
  d.op = KD_ROW_LAYERNORM;
  d.dtype = KD_DTYPE_BF16;
  d.rows = 4096;
  d.cols = 1024;
  d.has_weight = 1;
  d.has_bias = 1;
  return d;
}

kd_stats_t stats() {
  kd_stats_t s{};
  EXPECT_EQ(kd_stats(&s), KD_SUCCESS);
  return s;
}

// Without kd_init: the check reads no process state.
TEST(CApiRow, DescCheckSaysWhyARowCallIsNotKeyed) {
  kd_row_desc d = layernorm_desc();
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_KEYABLE);
  EXPECT_EQ(kd_row_desc_check(nullptr), KD_ROW_DESC_INVALID);
  d.op = static_cast<kd_row_op>(3);
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_INVALID);
  d = layernorm_desc();
  d.dtype = static_cast<kd_dtype>(-1);
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_INVALID);
  d = layernorm_desc();
  d.has_bias = 2;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_INVALID);
  d = layernorm_desc();
  d.op = KD_ROW_SOFTMAX;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_OPERAND) << "softmax takes no weight or bias";
  d.has_weight = d.has_bias = 0;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_KEYABLE);
  d = layernorm_desc();
  d.op = KD_ROW_RMSNORM;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_OPERAND) << "rmsnorm takes no bias";
  d.has_bias = 0;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_KEYABLE);
  d = layernorm_desc();
  d.rows = 0;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_SHAPE);
  d = layernorm_desc();
  d.cols = -5;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_SHAPE);
  d = layernorm_desc();
  d.rows = std::int64_t{1} << 20;
  d.cols = std::int64_t{1} << 19;  // 2^39 bf16 elements: exactly 2^40 bytes
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_KEYABLE);
  d.cols += 1;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_SHAPE);
  d.rows = d.cols = INT64_MAX;
  EXPECT_EQ(kd_row_desc_check(&d), KD_ROW_DESC_SHAPE) << "no overflow";
}

TEST(CApiRow, KeyLineIsTheRowShapeLine) {
  kd_row_desc d = layernorm_desc();
  char line[KD_KEY_LINE_BYTES];
  ASSERT_EQ(kd_row_desc_key_line(&d, line, sizeof line), KD_SUCCESS);
  EXPECT_EQ(std::string(line), "layernorm dtype=bf16 rows=4096 cols=1024 weight=1 bias=1");
  d.op = KD_ROW_RMSNORM;
  d.has_bias = 0;
  ASSERT_EQ(kd_row_desc_key_line(&d, line, sizeof line), KD_SUCCESS);
  EXPECT_EQ(std::string(line), "rmsnorm dtype=bf16 rows=4096 cols=1024 weight=1");
  d = kd_row_desc{KD_ROW_SOFTMAX, KD_DTYPE_F32, 3, 7, 0, 0};
  ASSERT_EQ(kd_row_desc_key_line(&d, line, sizeof line), KD_SUCCESS);
  const std::string softmax = "softmax dtype=f32 rows=3 cols=7";
  EXPECT_EQ(std::string(line), softmax);
  EXPECT_EQ(kd_row_desc_key_line(&d, line, softmax.size()), KD_EINVAL) << "no room for the NUL";
  EXPECT_EQ(kd_row_desc_key_line(nullptr, line, sizeof line), KD_EINVAL);
  EXPECT_EQ(kd_row_desc_key_line(&d, nullptr, sizeof line), KD_EINVAL);
  d.has_weight = 1;
  EXPECT_EQ(kd_row_desc_key_line(&d, line, sizeof line), KD_EINVAL) << "not a keyed call";
}

TEST(CApiRow, CallsBeforeInitSayNotInitialised) {
  const kd_row_desc d = layernorm_desc();
  alignas(16) float buf[8] = {};
  EXPECT_EQ(kd_row(&d, buf, buf, buf, buf, 1e-5f, nullptr, nullptr), KD_ENOTINIT);
  const kd_entry* entry = nullptr;
  EXPECT_EQ(kd_row_lookup(&d, nullptr, &entry, nullptr), KD_ENOTINIT);
  EXPECT_EQ(entry, nullptr);
}

class CApiRowInit : public ::testing::Test {
protected:
  void SetUp() override {
    cache_ = (dir_.path() / "cache").string();
    kd_options o{};
    o.cache_dir = cache_.c_str();
    o.flags = KD_NO_DAEMON;
    o.poll_interval_ms = 50;
    ASSERT_EQ(kd_init(&o), KD_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(kd_shutdown(), KD_SUCCESS); }

  kd::test::TempDir dir_;
  std::string cache_;
};

TEST_F(CApiRowInit, BadArgumentsAreRefusedBeforeAnyLookup) {
  const kd_row_desc d = layernorm_desc();
  alignas(16) float x[8] = {}, y[8] = {}, w[8] = {}, b[8] = {};
  const kd_stats_t before = stats();
  EXPECT_EQ(kd_row(nullptr, x, w, b, y, 1e-5f, nullptr, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_row(&d, nullptr, w, b, y, 1e-5f, nullptr, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_row(&d, x, w, b, nullptr, 1e-5f, nullptr, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_row(&d, x, nullptr, b, y, 1e-5f, nullptr, nullptr), KD_EINVAL) << "desc says weight=1";
  EXPECT_EQ(kd_row(&d, x, w, nullptr, y, 1e-5f, nullptr, nullptr), KD_EINVAL) << "desc says bias=1";
  kd_row_desc softmax{KD_ROW_SOFTMAX, KD_DTYPE_F32, 2, 4, 0, 0};
  EXPECT_EQ(kd_row(&softmax, x, w, nullptr, y, 0.f, nullptr, nullptr), KD_EINVAL) << "desc says no weight";
  const kd_entry* entry = nullptr;
  EXPECT_EQ(kd_row_lookup(nullptr, nullptr, &entry, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_row_lookup(&d, nullptr, nullptr, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_row_launch(nullptr, nullptr, nullptr, nullptr), KD_EINVAL);
  const kd_stats_t after = stats();
  EXPECT_EQ(after.misses, before.misses) << "refused calls are not counted";
  EXPECT_EQ(after.hits, before.hits);
}

// Without a GPU every row call falls back with the reason a GEMM's gets, counted as a miss. With
// one (this test run on a GPU machine), a row call of an empty cache is a miss all the same.
TEST_F(CApiRowInit, RowCallWithoutATunedKernelFallsBackAndIsCountedAsAMiss) {
  const kd_row_desc d = layernorm_desc();
  alignas(16) float x[8] = {}, y[8] = {}, w[8] = {}, b[8] = {};
  const kd_stats_t before = stats();
  kd_fallback_reason reason = KD_FALLBACK_LAUNCH_FAILED;
  ASSERT_EQ(kd_row(&d, x, w, b, y, 1e-5f, nullptr, &reason), KD_FALLBACK);
  EXPECT_EQ(kd_fallback_reason_is_miss(reason), 1) << kd_fallback_reason_name(reason);
  const kd_entry* entry = reinterpret_cast<const kd_entry*>(&d);
  kd_fallback_reason second = KD_FALLBACK_LAUNCH_FAILED;
  EXPECT_EQ(kd_row_lookup(&d, nullptr, &entry, &second), KD_FALLBACK);
  EXPECT_EQ(entry, nullptr);
  EXPECT_EQ(kd_fallback_reason_is_miss(second), 1) << kd_fallback_reason_name(second);
  const kd_stats_t after = stats();
  EXPECT_EQ(after.misses, before.misses + 2);
  std::uint64_t fallbacks_before = 0, fallbacks_after = 0;
  for (int r = 0; r < KD_FALLBACK_REASON_COUNT; ++r) {
    fallbacks_before += before.fallbacks[r];
    fallbacks_after += after.fallbacks[r];
  }
  EXPECT_EQ(fallbacks_after, fallbacks_before + 2);
  EXPECT_EQ(after.hits, before.hits);
}

}  // namespace
