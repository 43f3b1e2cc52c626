// kdctl ls, show and stats against a temporary cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kdctl_runner.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

class KdctlCache : public ::testing::Test {
protected:
  void SetUp() override { make_test_cache(cache()); }
  std::filesystem::path cache() const { return tmp_.path() / "cache"; }
  KdctlRun kdctl(std::vector<std::string> args) {
    args.push_back("--cache-dir");
    args.push_back(cache().string());
    return run_kdctl(tmp_.path(), args);
  }
  TempDir tmp_;
};

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(KdctlCache, MissingCacheIsAnErrorNamingTheDirectory) {
  const auto nowhere = (tmp_.path() / "nowhere").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"ls"}, {"stats"}, {"show", bf16_shape(4096)}, {"export", "-o", "x.kda"},
        {"evict", "--gpu", "H100"}}) {
    auto full_args = args;
    full_args.insert(full_args.end(), {"--cache-dir", nowhere});
    const auto r = run_kdctl(tmp_.path(), full_args);
    EXPECT_EQ(r.rc, 1) << args[0];
    EXPECT_NE(r.err.find("no kdispatch cache at " + nowhere), std::string::npos) << args[0] << ": " << r.err;
  }
}

TEST_F(KdctlCache, DefaultCacheDirComesFromTheEnvironment) {
  const auto r = run_kdctl(tmp_.path(), {"ls"}, {"KD_CACHE_DIR=" + cache().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("4 record(s)"), std::string::npos) << r.out;
}

TEST_F(KdctlCache, LsListsEveryRecordAndFilters) {
  const auto all = kdctl({"ls"});
  ASSERT_EQ(all.rc, 0) << all.err;
  EXPECT_NE(all.out.find("4 record(s)"), std::string::npos) << all.out;
  EXPECT_EQ(count_of(all.out, "NVIDIA H100 80GB HBM3"), 3u) << all.out;
  EXPECT_NE(all.out.find("x1.25"), std::string::npos) << all.out;  // 12.5 / 10.0
  EXPECT_NE(all.out.find(bf16_shape(8192)), std::string::npos);
  EXPECT_NE(all.out.find("  1d\n"), std::string::npos) << all.out;  // the 8192 record is 30 hours old

  const auto h200 = kdctl({"ls", "--gpu", "H200"});
  EXPECT_NE(h200.out.find("1 record(s)"), std::string::npos) << h200.out;
  EXPECT_EQ(count_of(h200.out, "H100"), 0u);

  const auto f32 = kdctl({"ls", "--dtype", "f32", "--json"});
  ASSERT_EQ(f32.rc, 0);
  const auto j = nlohmann::json::parse(f32.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["shape"], f32_shape());
  EXPECT_EQ(j[0]["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(nlohmann::json::parse(kdctl({"ls", "--dtype", "f16", "--json"}).out).size(), 0u);
  EXPECT_EQ(kdctl({"ls", "--op", "conv", "--json"}).rc, 2);  // no record can match: a usage error
}

TEST_F(KdctlCache, ShowPrintsRecordProvenanceAndTree) {
  const auto r = kdctl({"show", full(bf16_shape(4096), kH100)});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("search:     search-a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("proposer:   builtin"), std::string::npos);
  EXPECT_NE(r.out.find("SM clock 1980 MHz"), std::string::npos);
  EXPECT_NE(r.out.find("\"entry\":\"kd_main\""), std::string::npos);  // the plan
  EXPECT_NE(r.out.find("search tree search-a: 3 node(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kLoserIdea), std::string::npos);
  EXPECT_NE(r.out.find("wrong_result"), std::string::npos);
  EXPECT_NE(r.out.find("*1"), std::string::npos) << r.out;  // node 1 made the stored kernel
  EXPECT_EQ(r.out.find("extern \"C\""), std::string::npos);  // no source without --source
  EXPECT_NE(kdctl({"show", full(bf16_shape(4096), kH100), "--source"}).out.find("extern \"C\""),
            std::string::npos);
}

TEST_F(KdctlCache, ShowByShapeLinePicksTheGpu) {
  const auto ambiguous = kdctl({"show", bf16_shape(4096)});
  EXPECT_EQ(ambiguous.rc, 2);
  EXPECT_NE(ambiguous.err.find("2 records match"), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find("NVIDIA H200"), std::string::npos);

  const auto h200 = kdctl({"show", bf16_shape(4096), "--gpu", "H200", "--json"});
  ASSERT_EQ(h200.rc, 0) << h200.err;
  const auto j = nlohmann::json::parse(h200.out);
  EXPECT_EQ(j["key"], full(bf16_shape(4096), kH200));
  EXPECT_EQ(j["tree"]["nodes"].size(), 3u);
  EXPECT_FALSE(j["tree"]["nodes"][1].contains("source"));
  EXPECT_EQ(j["validation"]["trials"], 5);

  const auto unique = kdctl({"show", bf16_shape(8192)});
  EXPECT_EQ(unique.rc, 0) << unique.err;
}

// A range record (issue 29): bf16_shape(4096)'s key standing for n=129..256.
std::string range_shape() {
  std::string line = bf16_shape(4096);
  line.replace(line.find(" n=16 "), 6, " n=129..256 ");
  return line;
}
std::string shape_at(int n) {
  std::string line = bf16_shape(4096);
  line.replace(line.find(" n=16 "), 6, " n=" + std::to_string(n) + " ");
  return line;
}

TEST_F(KdctlCache, ShowPrintsARangeAndTheNItWasCheckedAt) {
  {
    CacheWriter w(cache());
    Record r = test_record(full(range_shape(), kH100), std::chrono::seconds(60));
    r.plan.launches[0].grid = {8, 4, 1};
    r.plan.launches[0].grid_rule[1] = GridRule{.offset = 63, .div = 64};
    r.validation_report = R"({"trials":5,"range":{"lo":129,"hi":256,"checked":[129,131,182,192,193,256],)"
                          R"("timed":[{"n":129,"candidate_us":9.5,"baseline_us":11.0,"verdict":"passed"},)"
                          R"({"n":182,"candidate_us":10.25,"baseline_us":12.0,"verdict":"passed"},)"
                          R"({"n":256,"candidate_us":12.0,"baseline_us":14.5,"verdict":"passed"}]}})";
    w.commit_record(r);
  }
  const auto by_range = kdctl({"show", full(range_shape(), kH100)});
  ASSERT_EQ(by_range.rc, 0) << by_range.err;
  EXPECT_NE(by_range.out.find("range:      n=129..256; checked at n=129, 131, 182, 192, 193, 256; timed at n=129 "
                              "(9.50 us vs cuBLAS 11.00 us), 182 (10.25 us vs cuBLAS 12.00 us), 256 (12.00 us vs "
                              "cuBLAS 14.50 us)"),
            std::string::npos)
      << by_range.out;
  EXPECT_NE(by_range.out.find("\"grid_rule\":[null,{\"div\":64,\"offset\":63},null]"), std::string::npos)
      << by_range.out;

  // An n the range serves finds the range record; one outside finds nothing.
  const auto covered = kdctl({"show", full(shape_at(200), kH100)});
  ASSERT_EQ(covered.rc, 0) << covered.err;
  EXPECT_NE(covered.out.find("the range record below serves n=200"), std::string::npos) << covered.out;
  EXPECT_NE(covered.out.find("key:        " + full(range_shape(), kH100)), std::string::npos) << covered.out;
  EXPECT_EQ(kdctl({"show", full(shape_at(300), kH100)}).rc, 1);
  // The exact record of n=16 is still its own.
  const auto exact = kdctl({"show", full(bf16_shape(4096), kH100)});
  EXPECT_EQ(exact.out.find("range:"), std::string::npos) << exact.out;
}

// A record with a workspace says how much, and whether PyTorch's cuBLAS workspace lets it run inside
// CUDA graphs; a record without one says nothing about it.
TEST_F(KdctlCache, ShowSaysWhetherARecordsWorkspaceFitsCudaGraphs) {
  const std::string big = "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=4096 k=4096 lda=4096 ldb=4096 "
                          "ldc=4096 batch=1 epilogue=none beta0=1";
  const std::string small = "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=1024 n=1024 k=1024 lda=1024 ldb=1024 "
                            "ldc=1024 batch=1 epilogue=none beta0=1";
  {
    CacheWriter w(cache());
    Record r = test_record(full(big, kH100), std::chrono::hours(1));
    r.plan.workspace_bytes = 134774784;
    w.commit_record(r);
    r = test_record(full(small, kH100), std::chrono::hours(1));
    r.plan.workspace_bytes = 8u << 20;
    w.commit_record(r);
  }
  const auto large = kdctl({"show", full(big, kH100)});
  ASSERT_EQ(large.rc, 0) << large.err;
  EXPECT_NE(large.out.find("workspace:  128.5MiB per call; inside a CUDA graph it runs only where the caller lends "
                           "cuBLAS that much (PyTorch lends 32.0MiB: not enough)"),
            std::string::npos)
      << large.out;
  const auto fits = kdctl({"show", full(small, kH100)});
  ASSERT_EQ(fits.rc, 0) << fits.err;
  EXPECT_NE(fits.out.find("workspace:  8.0MiB per call"), std::string::npos) << fits.out;
  EXPECT_EQ(fits.out.find("not enough"), std::string::npos) << fits.out;
  EXPECT_EQ(kdctl({"show", full(bf16_shape(4096), kH100)}).out.find("workspace:"), std::string::npos);
}

// A vendor verdict (a bucket searched without a winner): ls and show say cuBLAS was kept, with the
// best candidate's time, and an n of its range finds it.
TEST_F(KdctlCache, LsAndShowSayAVendorVerdictKeptCublas) {
  {
    CacheWriter w(cache());
    Record r;
    r.key_line = full(range_shape(), kH100);
    r.kind = RecordKind::vendor;
    r.candidate_us = 13.5;
    r.baseline_us = 12.25;
    r.proposer = "vendor";
    r.idea = "no range winner: lost at n=256";
    r.created_unix_s = 1;
    w.commit_record(r);
  }
  const auto ls = kdctl({"ls"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  EXPECT_NE(ls.out.find("kept cuBLAS"), std::string::npos) << ls.out;
  const auto show = kdctl({"show", full(shape_at(200), kH100)});
  ASSERT_EQ(show.rc, 0) << show.err;
  EXPECT_NE(show.out.find("kind:       vendor"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("verdict:    cuBLAS kept: best correct candidate 13.50 us, cuBLAS 12.25 us"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("no range winner: lost at n=256"), std::string::npos) << show.out;
}

TEST_F(KdctlCache, ShowMissingOrBadKey) {
  const auto missing = kdctl({"show", bf16_shape(1234)});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("no record for"), std::string::npos) << missing.err;
  const auto bad = kdctl({"show", "gemm a=bf16 nonsense"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("bad KEY: column"), std::string::npos) << bad.err;
}

TEST_F(KdctlCache, StatsCountsRecordsPerGpuTreesAndJobs) {
  const auto r = kdctl({"stats", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto c = nlohmann::json::parse(r.out)["cache"];
  EXPECT_EQ(c["records"], 4);
  EXPECT_EQ(c["damaged_records"], 0);
  EXPECT_EQ(c["trees"], 1);
  EXPECT_EQ(c["jobs"], 1);
  EXPECT_EQ(c["jobs_by_state"]["queued"], 1);
  EXPECT_EQ(c["per_gpu"]["NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"]["records"], 3);
  EXPECT_EQ(c["per_gpu"]["NVIDIA H200 (sm_90, 132 SMs)"]["records"], 1);
  EXPECT_GT(c["data_file_bytes"].get<std::uint64_t>(), c["record_bytes"].get<std::uint64_t>());
  EXPECT_EQ(c["generation"], 4);  // four publishes

  const auto text = kdctl({"stats"});
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("4 record(s)"), std::string::npos) << text.out;
}

TEST_F(KdctlCache, StatsWithoutADaemonSaysTheClientCountersAreUnavailable) {
  const auto nowhere = (tmp_.path() / "none.sock").string();
  const auto r = kdctl({"stats", "--json", "--socket", nowhere});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cache"]["records"], 4);
  EXPECT_FALSE(j["clients"]["available"].get<bool>());
  EXPECT_NE(j["clients"]["reason"].get<std::string>().find("no kdispatchd running on " + nowhere), std::string::npos)
      << j["clients"];
  EXPECT_TRUE(j["daemon"].is_null());

  const auto text = kdctl({"stats", "--socket", nowhere});
  EXPECT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("client counters: unavailable: no kdispatchd running on " + nowhere), std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace kd::test
