// kdctl evict: by age, key pattern, GPU and size cap; dry runs change nothing.
#include <gtest/gtest.h>

#include <chrono>

#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

using std::chrono::hours;

class KdctlEvict : public ::testing::Test {
protected:
  std::filesystem::path cache() const { return tmp_.path() / "cache"; }
  KdctlRun evict(std::vector<std::string> args) {
    args.insert(args.begin(), "evict");
    args.insert(args.end(), {"--cache-dir", cache().string()});
    return run_kdctl(tmp_.path(), args);
  }
  // The key lines left, in key order (opened after the kdctl child has exited).
  std::vector<std::string> keys() const { return record_keys(cache()); }
  TempDir tmp_;
};

TEST_F(KdctlEvict, OlderThanRemovesOnlyOldRecordsAndDryRunNothing) {
  {
    CacheWriter w(cache());
    w.commit_record(test_record(full(bf16_shape(1024), kH100), hours(24 * 40)));
    w.commit_record(test_record(full(bf16_shape(2048), kH100), hours(24)));
  }
  const auto dry = evict({"--older-than", "30d", "--dry-run"});
  ASSERT_EQ(dry.rc, 0) << dry.err;
  EXPECT_NE(dry.out.find("1 of 2 record(s) would be evicted"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("older than 30d"), std::string::npos) << dry.out;
  EXPECT_EQ(keys().size(), 2u);

  const auto real = evict({"--older-than", "30d"});
  ASSERT_EQ(real.rc, 0) << real.err;
  EXPECT_EQ(keys(), std::vector<std::string>{full(bf16_shape(2048), kH100)});
}

TEST_F(KdctlEvict, KeyPatternAndGpuSelect) {
  make_test_cache(cache());
  ASSERT_EQ(evict({"--key-pattern", "gemm a=f32 *"}).rc, 0);
  EXPECT_EQ(keys().size(), 3u);
  for (const auto& k : keys()) EXPECT_EQ(k.find("a=f32"), std::string::npos) << k;

  ASSERT_EQ(evict({"--gpu", "H200"}).rc, 0);
  const auto left = keys();
  EXPECT_EQ(left, (std::vector<std::string>{full(bf16_shape(4096), kH100), full(bf16_shape(8192), kH100)}));
}

TEST_F(KdctlEvict, MaxSizeEvictsOldestFirst) {
  std::uint64_t one_record = 0;
  {
    CacheWriter w(cache());
    for (int i = 0; i < 4; ++i) {
      // Record i is (4 - i) hours old: record 0 is the oldest.
      w.commit_record(test_record(full(bf16_shape(1024 * (i + 1)), kH100), hours(4 - i), 4096));
    }
    one_record = w.get_raw("records", full(bf16_shape(1024), kH100))->size();
  }
  // Room for two and a half records: the two oldest go.
  const auto cap = std::to_string(one_record * 5 / 2);
  const auto r = evict({"--max-size", cap});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("over the size cap"), std::string::npos) << r.out;
  const auto left = keys();
  ASSERT_EQ(left.size(), 2u) << r.out;
  for (const auto& k : left) {
    EXPECT_TRUE(k == full(bf16_shape(3072), kH100) || k == full(bf16_shape(4096), kH100)) << k;
  }
}

TEST_F(KdctlEvict, UsageErrors) {
  make_test_cache(cache());
  EXPECT_EQ(evict({}).rc, 2);
  const auto bad_age = evict({"--older-than", "30x"});
  EXPECT_EQ(bad_age.rc, 2);
  EXPECT_NE(bad_age.err.find("--older-than \"30x\""), std::string::npos) << bad_age.err;
  EXPECT_EQ(evict({"--max-size", "lots"}).rc, 2);
  EXPECT_EQ(keys().size(), 4u);
}

}  // namespace
}  // namespace kd::test
