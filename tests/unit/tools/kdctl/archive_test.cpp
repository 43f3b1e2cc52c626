// kdctl export / import: round trip, a corrupted archive, foreign and damaged records.
#include <gtest/gtest.h>

#include <chrono>

#include "archive.hpp"
#include "key/gemm_key.hpp"
#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

using kdctl::write_archive;

const DevicePart kH100Part{"sm_90", "NVIDIA H100 80GB HBM3", 132};

// f32 nn.Linear(768, 768) on 33..64 tokens.
std::string kdctl_range_shape() {
  return std::get<GemmKey>(parse_key("linear dtype=f32 tokens=33..64 in=768 out=768")).shape_line();
}

class KdctlArchive : public ::testing::Test {
protected:
  void SetUp() override { make_test_cache(source()); }
  std::filesystem::path source() const { return tmp_.path() / "source"; }
  std::filesystem::path target() const { return tmp_.path() / "target"; }
  std::filesystem::path archive() const { return tmp_.path() / "h100.kda"; }
  KdctlRun kdctl(const std::vector<std::string>& args) { return run_kdctl(tmp_.path(), args); }
  KdctlRun import_archive() {
    return kdctl({"import", archive().string(), "--cache-dir", target().string(), "--create"});
  }
  TempDir tmp_;
};

TEST_F(KdctlArchive, ExportThenImportReproducesTheGpusRecords) {
  const auto exported = kdctl({"export", "--cache-dir", source().string(), "--gpu",
                               "NVIDIA H100 80GB HBM3", "-o", archive().string()});
  ASSERT_EQ(exported.rc, 0) << exported.err;
  EXPECT_NE(exported.out.find("exported 3 record(s)"), std::string::npos) << exported.out;

  const auto imported = import_archive();
  ASSERT_EQ(imported.rc, 0) << imported.out << imported.err;
  EXPECT_NE(imported.out.find("3 imported, 0 rejected"), std::string::npos) << imported.out;

  // The kdctl children have exited: this process may open both caches now (one writer each).
  std::vector<std::pair<std::string, std::string>> expected;
  {
    const CacheWriter src(source());
    for (auto& kv : src.scan_raw("records")) {
      if (kv.first.find("H100") != std::string::npos) expected.push_back(std::move(kv));
    }
  }
  const CacheWriter dst(target());
  EXPECT_EQ(dst.scan_raw("records"), expected);

  // Importing again replaces, and says so.
  const auto again = import_archive();
  EXPECT_EQ(again.rc, 0);
  EXPECT_NE(again.out.find("replaced"), std::string::npos) << again.out;
}

TEST_F(KdctlArchive, ExportNeedsAGpuWhenTheCacheHoldsSeveral) {
  const auto r = kdctl({"export", "--cache-dir", source().string(), "-o", archive().string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("pick one GPU model with --gpu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"NVIDIA H200\""), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(archive()));
  // A substring naming one model is enough.
  EXPECT_EQ(kdctl({"export", "--cache-dir", source().string(), "--gpu", "H200", "-o", archive().string()}).rc, 0);
  EXPECT_EQ(kdctl({"export", "--cache-dir", source().string(), "--gpu", "A100", "-o", archive().string()}).rc, 2);
}

TEST_F(KdctlArchive, CorruptedArchiveImportsNothing) {
  ASSERT_EQ(kdctl({"export", "--cache-dir", source().string(), "--gpu", "H100", "-o", archive().string()}).rc, 0);
  std::string bytes = read_text(archive());
  bytes[bytes.size() / 2] ^= 0x01;
  write_text(archive(), bytes);

  const auto r = import_archive();
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing imported"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(target() / "data.mdb"));  // no cache was even created

  write_text(archive(), bytes.substr(0, bytes.size() - 10));  // truncated
  const auto truncated = import_archive();
  EXPECT_EQ(truncated.rc, 1);
  EXPECT_NE(truncated.err.find("no checksum trailer"), std::string::npos) << truncated.err;
}

TEST_F(KdctlArchive, ForeignAndDamagedRecordsAreRejectedWithTheReason) {
  using std::chrono::hours;
  const Record mine = test_record(full(bf16_shape(4096), kH100), hours(1));
  const Record foreign = test_record(full(bf16_shape(4096), kH200), hours(1));
  std::string damaged = serialize_record(test_record(full(bf16_shape(8192), kH100), hours(1)));
  damaged[damaged.size() - 3] ^= 0x40;
  Record no_device = test_record(bf16_shape(2048), hours(1));
  // An archive whose own checksum is right: only the records inside are wrong.
  write_text(archive(), write_archive(kH100Part, 1700000000,
                                      {serialize_record(mine), serialize_record(foreign), damaged,
                                       serialize_record(no_device)}));
  const auto r = import_archive();
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("1 imported, 3 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (foreign_gpu)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("record is for arch=sm_90 gpu=\"NVIDIA H200\" sms=132"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (corrupted)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum_mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key line has no device part"), std::string::npos) << r.out;

  const CacheWriter dst(target());
  const auto stored = dst.scan_raw("records");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].first, mine.key_line);
}

// Issue 29: a range record whose plan does not serve its range, and an exact record with grid
// rules, are rejected as the cache reader would refuse them; a sound range record is imported.
TEST_F(KdctlArchive, UnsoundRangeRecordsAreRejectedWithTheProblem) {
  using std::chrono::hours;
  const std::string range_shape = kdctl_range_shape();
  Record sound = test_record(full(range_shape, kH100), hours(1));
  sound.plan.launches.at(0).grid = {12, 4, 1};
  sound.plan.launches.at(0).grid_rule[1] = GridRule{.offset = 15, .div = 16};  // ceil(n / 16): 4 at n = 64
  Record stale = sound;
  stale.key_line = full(std::get<GemmKey>(parse_key(range_shape)).with_n_range(33, 80).shape_line(), kH100);
  Record exact_with_rules = sound;
  exact_with_rules.key_line = full(std::get<GemmKey>(parse_key(range_shape)).at_n(64).shape_line(), kH100);
  write_text(archive(), write_archive(kH100Part, 1700000000,
                                      {serialize_record(sound), serialize_record(stale), serialize_record(exact_with_rules)}));
  const auto r = import_archive();
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("1 imported, 2 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (unsound_range)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the plan does not serve n=33..80: plan: launches[0].grid_rule[1]: 5 at n=80, but grid[1] is 4"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("an exact record's plan has grid rules"), std::string::npos) << r.out;
  const CacheWriter dst(target());
  const auto stored = dst.scan_raw("records");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].first, sound.key_line);
}

TEST_F(KdctlArchive, ArchiveForAnotherGpuImportsIntoAnyCacheIntact) {
  // The cache is keyed by GPU, so importing an H200 archive on this (GPU-less) machine is fine.
  const Record h200 = test_record(full(bf16_shape(4096), kH200), std::chrono::hours(1));
  write_text(archive(), write_archive({"sm_90", "NVIDIA H200", 132}, 1700000000, {serialize_record(h200)}));
  const auto r = import_archive();
  EXPECT_EQ(r.rc, 0) << r.out;
  // An archive claiming H100 that carries the H200 record is the foreign case.
  write_text(archive(), write_archive(kH100Part, 1700000000, {serialize_record(h200)}));
  EXPECT_EQ(import_archive().rc, 1);
}

TEST(ArchiveFormat, HeaderDamageIsNamed) {
  const std::string good = write_archive(kH100Part, 5, {});
  ASSERT_TRUE(std::holds_alternative<kdctl::Archive>(kdctl::read_archive(good)));
  const auto parsed = std::get<kdctl::Archive>(kdctl::read_archive(good));
  EXPECT_EQ(parsed.header.device, kH100Part);
  EXPECT_EQ(parsed.header.created_unix_s, 5);
  const auto damaged = kdctl::read_archive("hello");
  const auto* error = std::get_if<kdctl::ArchiveError>(&damaged);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(error->reason.find("too short"), std::string::npos);
}

}  // namespace
}  // namespace kd::test
