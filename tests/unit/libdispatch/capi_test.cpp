// The C API without a GPU: version, error strings, init/shutdown reference counting, argument
// checks, and stats. (GPU behaviour: tests/gpu/capi/.)
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include "kdispatch/kdispatch.h"
#include "support/gemm_desc.hpp"
#include "support/temp_dir.hpp"

namespace {

kd_options options_for(const kd::test::TempDir& dir, std::string& cache) {
  cache = (dir.path() / "cache").string();
  kd_options o{};
  o.cache_dir = cache.c_str();
  o.flags = KD_NO_DAEMON;
  o.poll_interval_ms = 50;
  return o;
}

TEST(CApi, VersionMatchesMacros) {
  int major = -1, minor = -1, patch = -1;
  EXPECT_STREQ(kd_version(&major, &minor, &patch), KD_VERSION_STRING);
  EXPECT_EQ(major, KD_VERSION_MAJOR);
  EXPECT_EQ(minor, KD_VERSION_MINOR);
  EXPECT_EQ(patch, KD_VERSION_PATCH);
}

TEST(CApi, StrerrorNamesEveryCode) {
  for (int code : {KD_SUCCESS, KD_FALLBACK, KD_EINVAL, KD_ENOTINIT, KD_ECUDA, KD_ECUBLAS,
                   KD_EUNSUPPORTED, KD_EINTERNAL})
    EXPECT_EQ(std::string(kd_strerror(code)).rfind("KD_", 0), 0u) << code;
  EXPECT_STREQ(kd_strerror(12345), "unknown kdispatch error code");
  EXPECT_STREQ(kd_fallback_reason_name(KD_FALLBACK_CAPTURING), "capturing");
  EXPECT_STREQ(kd_fallback_reason_name(KD_FALLBACK_REASON_COUNT), "unknown");
}

TEST(CApi, CallsBeforeInitSayNotInitialised) {
  kd_gemm_desc desc{};
  const kd_entry* entry = nullptr;
  EXPECT_EQ(kd_gemm_lookup(&desc, nullptr, &entry, nullptr), KD_ENOTINIT);
  float one = 1, zero = 0;
  int dummy = 0;
  EXPECT_EQ(kd_gemm(KD_OP_N, KD_OP_N, 1, 1, 1, &one, &dummy, KD_DTYPE_F32, 1, &dummy, KD_DTYPE_F32,
                    1, &zero, &dummy, KD_DTYPE_F32, 1, KD_COMPUTE_F32, KD_MATH_DEFAULT, nullptr),
            KD_ENOTINIT);
  EXPECT_EQ(kd_shutdown(), KD_ENOTINIT);
}

TEST(CApi, InitIsReferenceCountedAndShutdownReturns) {
  kd::test::TempDir dir;
  std::string cache;
  const kd_options o = options_for(dir, cache);
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);
  ASSERT_EQ(kd_init(nullptr), KD_SUCCESS);
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
  kd_gemm_desc desc{};
  const kd_entry* entry = nullptr;
  EXPECT_NE(kd_gemm_lookup(&desc, nullptr, &entry, nullptr), KD_ENOTINIT) << "first shutdown ended it";
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
  EXPECT_EQ(kd_shutdown(), KD_ENOTINIT);
}

TEST(CApi, NullArgumentsAreRejected) {
  kd::test::TempDir dir;
  std::string cache;
  const kd_options o = options_for(dir, cache);
  ASSERT_EQ(kd_init(&o), KD_SUCCESS);
  const kd_entry* entry = nullptr;
  EXPECT_EQ(kd_gemm_lookup(nullptr, nullptr, &entry, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_gemm_launch(nullptr, nullptr, nullptr, nullptr), KD_EINVAL);
  EXPECT_EQ(kd_stats(nullptr), KD_EINVAL);
  float one = 1;
  EXPECT_EQ(kd_gemm(KD_OP_N, KD_OP_N, 1, 1, 1, &one, nullptr, KD_DTYPE_F32, 1, nullptr,
                    KD_DTYPE_F32, 1, &one, nullptr, KD_DTYPE_F32, 1, KD_COMPUTE_F32,
                    KD_MATH_DEFAULT, nullptr),
            KD_EINVAL);
  EXPECT_EQ(kd_shutdown(), KD_SUCCESS);
}

kd_gemm_desc f32_desc() { return kd::test::gemm_desc(KD_OP_N, KD_OP_N, 64, 64, 64, KD_DTYPE_F32); }

// Without kd_init: the check reads no process state.
TEST(CApi, DescCheckSaysWhyACallIsNotKeyed) {
  kd_gemm_desc d = f32_desc();
  EXPECT_EQ(kd_gemm_desc_check(&d), KD_DESC_KEYABLE);
  EXPECT_EQ(kd_gemm_desc_check(nullptr), KD_DESC_INVALID);
  d.c_type = KD_DTYPE_F16;
  EXPECT_EQ(kd_gemm_desc_check(&d), KD_DESC_DATA_TYPE);
  d = f32_desc();
  d.compute = KD_COMPUTE_F16;
  EXPECT_EQ(kd_gemm_desc_check(&d), KD_DESC_COMPUTE_TYPE);
  d = f32_desc();
  d.lda = 63;
  EXPECT_EQ(kd_gemm_desc_check(&d), KD_DESC_SHAPE);
  d = f32_desc();
  d.batch = 2;
  d.stride_a = d.stride_b = 64 * 64;
  d.stride_c = 64 * 63;  // the outputs overlap
  EXPECT_EQ(kd_gemm_desc_check(&d), KD_DESC_BATCH_LAYOUT);
}

TEST(CApi, KeyLineIsTheShapeLineOfAKeyableCall) {
  kd_gemm_desc d = f32_desc();
  d.math = KD_MATH_TF32_ALLOWED;
  char line[KD_KEY_LINE_BYTES];
  ASSERT_EQ(kd_gemm_desc_key_line(&d, line, sizeof line), KD_SUCCESS);
  const std::string expected =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 "
      "epilogue=none beta0=0 precision=tf32";
  EXPECT_EQ(line, expected);
  EXPECT_EQ(kd_gemm_desc_key_line(&d, line, expected.size()), KD_EINVAL) << "no room for the NUL";
  EXPECT_EQ(kd_gemm_desc_key_line(&d, line, expected.size() + 1), KD_SUCCESS);
  EXPECT_EQ(kd_gemm_desc_key_line(nullptr, line, sizeof line), KD_EINVAL);
  EXPECT_EQ(kd_gemm_desc_key_line(&d, nullptr, sizeof line), KD_EINVAL);
  d.b_type = KD_DTYPE_BF16;
  EXPECT_EQ(kd_gemm_desc_key_line(&d, line, sizeof line), KD_EINVAL) << "not a keyed call";
}

TEST(CApi, MissReasonsAreTheLookupStageOnes) {
  using Reasons = std::initializer_list<int>;
  for (const int r : Reasons{KD_FALLBACK_NO_ENTRY, KD_FALLBACK_NOT_LOADED, KD_FALLBACK_UNSUPPORTED,
                             KD_FALLBACK_NO_GPU, KD_FALLBACK_NOT_INITIALIZED})
    EXPECT_EQ(kd_fallback_reason_is_miss(r), 1) << kd_fallback_reason_name(r);
  for (const int r : Reasons{KD_FALLBACK_MISALIGNED, KD_FALLBACK_LAUNCH_FAILED, KD_FALLBACK_WORKSPACE_BUSY,
                             KD_FALLBACK_WORKSPACE_TOO_SMALL, KD_FALLBACK_REASON_COUNT, -1})
    EXPECT_EQ(kd_fallback_reason_is_miss(r), 0) << r;
}

TEST(CApi, StatsAreReadableAndFallbacksSumWithHits) {
  kd_stats_t s;
  std::memset(&s, 0xff, sizeof(s));
  ASSERT_EQ(kd_stats(&s), KD_SUCCESS);
  std::uint64_t fallbacks = 0;
  for (int r = KD_FALLBACK_REASON_COUNT; r < KD_FALLBACK_REASON_MAX; ++r) EXPECT_EQ(s.fallbacks[r], 0u);
  for (int r = 0; r < KD_FALLBACK_REASON_COUNT; ++r) fallbacks += s.fallbacks[r];
  EXPECT_GE(fallbacks, s.misses);
}

}  // namespace
