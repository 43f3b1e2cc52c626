// Issue 33: row operators' records (rmsnorm, layernorm, softmax; stored under the row key's full
// line) in a real LMDB cache beside GEMM records, through the cache commands: export and import,
// evict, stats. A record stored under a malformed row line is damaged, never a GEMM or a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

#include <nlohmann/json.hpp>

#include "archive.hpp"
#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

using std::chrono::hours;

const DevicePart kH100Part{"sm_90", "NVIDIA H100 80GB HBM3", 132};

class KdctlRowRecords : public ::testing::Test {
protected:
  void SetUp() override {
    make_test_cache(cache());
    add_row_records(cache());
  }
  std::filesystem::path cache() const { return tmp_.path() / "cache"; }
  std::filesystem::path archive() const { return tmp_.path() / "h100.kda"; }
  KdctlRun kdctl(std::vector<std::string> args, const std::filesystem::path& dir) {
    args.insert(args.end(), {"--cache-dir", dir.string()});
    return run_kdctl(tmp_.path(), args);
  }
  KdctlRun kdctl(std::vector<std::string> args) { return kdctl(std::move(args), cache()); }
  TempDir tmp_;
};

bool holds(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

TEST_F(KdctlRowRecords, ExportAndImportCarryRowRecordsWithTheGemmOnes) {
  const KdctlRun exported = kdctl({"export", "--gpu", "H100", "-o", archive().string()});
  ASSERT_EQ(exported.rc, 0) << exported.out << exported.err;
  EXPECT_NE(exported.out.find("exported 5 record(s)"), std::string::npos) << exported.out;  // 3 GEMM + 2 row
  EXPECT_EQ(exported.err.find("damaged"), std::string::npos) << exported.err;

  const auto target = tmp_.path() / "target";
  const KdctlRun imported = kdctl({"import", archive().string(), "--create"}, target);
  ASSERT_EQ(imported.rc, 0) << imported.out << imported.err;
  EXPECT_NE(imported.out.find("5 imported, 0 rejected"), std::string::npos) << imported.out;
  EXPECT_NE(imported.out.find(full(kLayernorm, kH100)), std::string::npos) << imported.out;
  EXPECT_NE(imported.out.find(full(kSoftmax, kH100)), std::string::npos) << imported.out;

  const auto keys = record_keys(target);
  EXPECT_EQ(keys.size(), 5u);
  EXPECT_TRUE(holds(keys, full(kLayernorm, kH100)));
  EXPECT_TRUE(holds(keys, full(kSoftmax, kH100)));
  EXPECT_FALSE(holds(keys, full(kRmsnorm, kH200)));  // the H200's
  // Imported byte for byte: the layernorm record reads back as stored, with its baseline's name.
  const CacheWriter src(cache()), dst(target);
  const auto stored = dst.get_raw("records", full(kLayernorm, kH100));
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored, src.get_raw("records", full(kLayernorm, kH100)));
  EXPECT_NE(stored->find(kTorchLayerNorm), std::string::npos);
}

TEST_F(KdctlRowRecords, ExportOfAGpuWithOnlyRowRecordsNamesIt) {
  // The H200 holds a GEMM record and the rmsnorm one: both go, and the listing of GPUs counts both.
  const KdctlRun several = kdctl({"export", "-o", archive().string()});
  EXPECT_EQ(several.rc, 2);
  EXPECT_NE(several.err.find("\"NVIDIA H200\" (sm_90, 132 SMs): 2 record(s)"), std::string::npos) << several.err;
  EXPECT_NE(several.err.find("\"NVIDIA H100 80GB HBM3\" (sm_90, 132 SMs): 5 record(s)"), std::string::npos)
      << several.err;
}

TEST_F(KdctlRowRecords, ImportRejectsRowRecordsTheReaderWouldRefuse) {
  Record algo = row_test_record(full(kRmsnorm, kH100), hours(1));
  algo.kind = RecordKind::cublaslt_algo;
  algo.cublaslt_algo = std::string(64, '\x01');
  Record ruled = row_test_record(full(kLayernorm, kH100), hours(1));
  ruled.plan.launches.at(0).grid_rule[1] = GridRule{.offset = 15, .div = 16};
  Record foreign = row_test_record(full(kSoftmax, kH200), hours(1));
  const Record good = row_test_record(full("softmax dtype=f32 rows=65536 cols=128", kH100), hours(1));
  write_text(archive(), kdctl::write_archive(kH100Part, 1700000000,
                                             {serialize_record(algo), serialize_record(ruled),
                                              serialize_record(foreign), serialize_record(good)}));
  const auto target = tmp_.path() / "target";
  const KdctlRun r = kdctl({"import", archive().string(), "--create"}, target);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("1 imported, 3 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (wrong_kind)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not a cuBLASLt algorithm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (unsound_range)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a row operator's record is exact"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected (foreign_gpu)"), std::string::npos) << r.out;
  EXPECT_EQ(record_keys(target), std::vector<std::string>{good.key_line});
}

TEST_F(KdctlRowRecords, EvictSelectsRowRecordsByPatternAndGpuAndNeverAsDamaged) {
  // --damaged alone: no row record is damaged.
  const KdctlRun damaged = kdctl({"evict", "--damaged"});
  ASSERT_EQ(damaged.rc, 0) << damaged.err;
  EXPECT_NE(damaged.out.find("0 of 7 record(s) evicted"), std::string::npos) << damaged.out;

  const KdctlRun dry = kdctl({"evict", "--key-pattern", "layernorm *", "--dry-run"});
  ASSERT_EQ(dry.rc, 0) << dry.err;
  EXPECT_NE(dry.out.find("1 of 7 record(s) would be evicted"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find(full(kLayernorm, kH100)), std::string::npos) << dry.out;

  // A pattern over every operator's dtype token: the bf16 row records on the H100.
  ASSERT_EQ(kdctl({"evict", "--key-pattern", "* dtype=bf16 *", "--gpu", "H100"}).rc, 0);
  auto keys = record_keys(cache());
  EXPECT_EQ(keys.size(), 6u);
  EXPECT_FALSE(holds(keys, full(kSoftmax, kH100)));
  EXPECT_TRUE(holds(keys, full(kRmsnorm, kH200)));

  ASSERT_EQ(kdctl({"evict", "--gpu", "H200"}).rc, 0);
  keys = record_keys(cache());
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_FALSE(holds(keys, full(kRmsnorm, kH200)));
  EXPECT_TRUE(holds(keys, full(kLayernorm, kH100)));
}

TEST_F(KdctlRowRecords, StatsCountsRowRecordsPerGpuAndPerOperator) {
  const KdctlRun r = kdctl({"stats", "--json", "--socket", (tmp_.path() / "none.sock").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto c = nlohmann::json::parse(r.out)["cache"];
  EXPECT_EQ(c["records"], 7);
  EXPECT_EQ(c["damaged_records"], 0);
  EXPECT_EQ(c["per_gpu"]["NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"]["records"], 5);
  EXPECT_EQ(c["per_gpu"]["NVIDIA H200 (sm_90, 132 SMs)"]["records"], 2);
  EXPECT_EQ(c["per_op"]["gemm"]["records"], 4);
  EXPECT_EQ(c["per_op"]["layernorm"]["records"], 1);
  EXPECT_EQ(c["per_op"]["softmax"]["records"], 1);
  EXPECT_EQ(c["per_op"]["rmsnorm"]["records"], 1);

  const KdctlRun text = kdctl({"stats", "--socket", (tmp_.path() / "none.sock").string()});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("7 record(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("; 0 damaged"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("OPERATOR"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("layernorm"), std::string::npos) << text.out;
}

// What a row record was timed against is the framework's kernel, named as its verdict names it; no
// row record's listing says cuBLAS (issue 33).
TEST_F(KdctlRowRecords, LsAndShowNameTheFrameworksKernelAsTheBaseline) {
  const KdctlRun ls = kdctl({"ls", "--gpu", "H100"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  std::string softmax_line, layernorm_line;
  for (std::size_t at = 0, end; at < ls.out.size(); at = end + 1) {
    end = ls.out.find('\n', at);
    const std::string line = ls.out.substr(at, end - at);
    if (line.starts_with(kSoftmax)) softmax_line = line;
    if (line.starts_with(kLayernorm)) layernorm_line = line;
  }
  EXPECT_NE(softmax_line.find("kept the framework's kernel"), std::string::npos) << ls.out;
  EXPECT_NE(layernorm_line.find("x1.25"), std::string::npos) << ls.out;
  EXPECT_EQ(softmax_line.find("cuBLAS"), std::string::npos) << softmax_line;

  const auto listed = nlohmann::json::parse(kdctl({"ls", "--json"}).out);
  std::map<std::string, std::string> baseline;
  for (const auto& r : listed) baseline[r.at("key").get<std::string>()] = r.at("baseline").get<std::string>();
  EXPECT_EQ(baseline[full(kLayernorm, kH100)], kTorchLayerNorm);
  EXPECT_EQ(baseline[full(kSoftmax, kH100)], "the framework's kernel");
  EXPECT_EQ(baseline[full(bf16_shape(4096), kH100)], "cuBLAS");

  const KdctlRun kernel = kdctl({"show", kLayernorm, "--gpu", "H100"});
  ASSERT_EQ(kernel.rc, 0) << kernel.err;
  EXPECT_NE(kernel.out.find(std::string("times:      kernel 10.00 us, ") + kTorchLayerNorm + " 12.50 us, x1.25"),
            std::string::npos)
      << kernel.out;
  EXPECT_NE(kernel.out.find("versions:   record schema 1, NVRTC 13.0, driver 13000\n"), std::string::npos) << kernel.out;
  EXPECT_EQ(kernel.out.find("cuBLAS"), std::string::npos) << kernel.out;

  const KdctlRun verdict = kdctl({"show", full(kSoftmax, kH100)});
  ASSERT_EQ(verdict.rc, 0) << verdict.err;
  EXPECT_NE(verdict.out.find("verdict:    the framework's kernel kept: best correct candidate 30.00 us, the "
                             "framework's kernel 25.00 us"),
            std::string::npos)
      << verdict.out;
  EXPECT_EQ(verdict.out.find("cuBLAS"), std::string::npos) << verdict.out;
  const auto j = nlohmann::json::parse(kdctl({"show", full(kLayernorm, kH100), "--json"}).out);
  EXPECT_EQ(j.at("baseline"), kTorchLayerNorm);
}

TEST_F(KdctlRowRecords, AMalformedRowKeyIsAUsageErrorNamingTheToken) {
  const KdctlRun bad = kdctl({"show", "softmax dtype=f32 rows=4 cols=8 weight=1"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("kdctl show: bad KEY: column"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("softmax takes no weight or bias"), std::string::npos) << bad.err;
  const KdctlRun zero = kdctl({"show", "rmsnorm dtype=bf16 rows=0 cols=4096 weight=1"});
  EXPECT_EQ(zero.rc, 2);
  EXPECT_NE(zero.err.find("kdctl show: bad KEY: column"), std::string::npos) << zero.err;
  EXPECT_TRUE(zero.out.empty()) << zero.out;
}

// A record stored under a row line that does not parse (rows=0; softmax with a weight) is damaged in
// every listing, and `kdctl evict --damaged` removes it: never read as a GEMM, never a crash.
TEST_F(KdctlRowRecords, ARecordUnderAMalformedRowLineIsDamaged) {
  const std::string zero_rows = full("layernorm dtype=f32 rows=0 cols=1024 weight=1 bias=1", kH100);
  const std::string weighted_softmax = full("softmax dtype=f32 rows=4 cols=8 weight=1", kH100);
  {
    CacheWriter w(cache());
    w.commit_record(row_test_record(zero_rows, hours(1)));
    w.commit_record(row_test_record(weighted_softmax, hours(1)));
  }
  const auto none = (tmp_.path() / "none.sock").string();
  const KdctlRun stats = kdctl({"stats", "--json", "--socket", none});
  ASSERT_EQ(stats.rc, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["cache"]["damaged_records"], 2) << stats.out;

  const KdctlRun ls = kdctl({"ls"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  EXPECT_NE(ls.err.find("skipping damaged record " + zero_rows), std::string::npos) << ls.err;
  EXPECT_NE(ls.out.find("7 record(s), 2 damaged skipped"), std::string::npos) << ls.out;

  const KdctlRun exported = kdctl({"export", "--gpu", "H100", "-o", archive().string()});
  EXPECT_EQ(exported.rc, 1) << exported.out << exported.err;  // exported, but said what it skipped
  EXPECT_NE(exported.out.find("exported 5 record(s)"), std::string::npos) << exported.out;
  EXPECT_NE(exported.err.find("skipping damaged record " + weighted_softmax), std::string::npos) << exported.err;

  const KdctlRun evicted = kdctl({"evict", "--damaged"});
  ASSERT_EQ(evicted.rc, 0) << evicted.err;
  EXPECT_NE(evicted.out.find("2 of 9 record(s) evicted"), std::string::npos) << evicted.out;
  const auto keys = record_keys(cache());
  EXPECT_EQ(keys.size(), 7u);
  EXPECT_FALSE(holds(keys, zero_rows));
  EXPECT_TRUE(holds(keys, full(kLayernorm, kH100)));
}

}  // namespace
}  // namespace kd::test
