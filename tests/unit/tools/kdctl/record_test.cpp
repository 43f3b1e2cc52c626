// kdctl record: merging KD_RECORD files.
#include <gtest/gtest.h>

#include <sstream>
#include <variant>

#include "key/gemm_key.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

// The (calls, shape) pairs of a merged list, in order; fails the test on a line parse_key rejects.
std::vector<std::pair<int, std::string>> entries(const std::string& list) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(list);
  int pending = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# calls=", 0) == 0) {
      pending = std::stoi(line.substr(8));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(std::holds_alternative<GemmKey>(parse_key(line))) << line;
    out.emplace_back(pending, line);
    pending = -1;
  }
  return out;
}

TEST(KdctlRecord, MergesRunsCountingEachRunOnce) {
  TempDir tmp;
  // Run 1 and run 2 both missed 4096; run 2 also 8192 twice (a shared file): counts add up.
  write_text(tmp.path() / "run1.txt", bf16_shape(4096) + "\n" + f32_shape() + "\n");
  write_text(tmp.path() / "run2.txt", "\n# a comment\n" + bf16_shape(4096) + "\n" + bf16_shape(8192) + "\n" +
                                          bf16_shape(8192) + "  # count=5\n");
  // The device part and extra blanks are dropped: the same shape as run1's first line.
  write_text(tmp.path() / "run3.txt", "  " + full(bf16_shape(4096), kH100) + "\n");
  const auto r = run_kdctl(tmp.path(), {"record", "--buckets", "off", (tmp.path() / "run1.txt").string(),
                                        (tmp.path() / "run2.txt").string(),
                                        (tmp.path() / "run3.txt").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto merged = entries(r.out);
  ASSERT_EQ(merged.size(), 3u) << r.out;
  EXPECT_EQ(merged[0], std::make_pair(6, bf16_shape(8192)));
  EXPECT_EQ(merged[1], std::make_pair(3, bf16_shape(4096)));
  EXPECT_EQ(merged[2], std::make_pair(1, f32_shape()));
  EXPECT_NE(r.out.find("3 shape(s), 10 call(s)"), std::string::npos) << r.out;
}

TEST(KdctlRecord, MergedOutputMergesAgainWithItsCounts) {
  TempDir tmp;
  write_text(tmp.path() / "a.txt", bf16_shape(4096) + " # calls=4\n" + f32_shape() + "\n");
  const auto out = tmp.path() / "merged.txt";
  ASSERT_EQ(run_kdctl(tmp.path(), {"record", "--buckets", "off", (tmp.path() / "a.txt").string(), "-o", out.string()}).rc, 0);
  const auto again = run_kdctl(tmp.path(), {"record", "--buckets", "off", out.string(), out.string()});
  ASSERT_EQ(again.rc, 0) << again.err;
  const auto merged = entries(again.out);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0], std::make_pair(8, bf16_shape(4096)));
  EXPECT_EQ(merged[1], std::make_pair(2, f32_shape()));
}

TEST(KdctlRecord, BadLinesAreReportedWithFileAndLine) {
  TempDir tmp;
  const auto file = tmp.path() / "bad.txt";
  write_text(file, bf16_shape(4096) + "\ngemm a=bf16 ta=X\n" + f32_shape() + " # calls=zero\n");
  const auto strict = run_kdctl(tmp.path(), {"record", "--buckets", "off", file.string()});
  EXPECT_EQ(strict.rc, 1);
  EXPECT_NE(strict.err.find(file.string() + ":2: column"), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find(file.string() + ":3: bad count"), std::string::npos) << strict.err;
  EXPECT_EQ(entries(strict.out).size(), 1u);  // the good line is still written

  const auto lenient = run_kdctl(tmp.path(), {"record", "--buckets", "off", "--keep-going", file.string()});
  EXPECT_EQ(lenient.rc, 0);
  EXPECT_NE(lenient.err.find(":2:"), std::string::npos);
}

TEST(KdctlRecord, MissingInputAndNoInputAreErrors) {
  TempDir tmp;
  const auto missing = run_kdctl(tmp.path(), {"record", (tmp.path() / "none.txt").string()});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("none.txt"), std::string::npos);
  EXPECT_EQ(run_kdctl(tmp.path(), {"record"}).rc, 2);
}

TEST(KdctlHelp, EverySubcommandHasHelpWithExitCodes) {
  TempDir tmp;
  for (const char* cmd : {"record", "ls", "show", "stats", "export", "import", "evict", "prewarm", "status", "verify",
                          "search", "validate", "bench"}) {
    const auto r = run_kdctl(tmp.path(), {cmd, "--help"});
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_NE(r.out.find("Exit codes"), std::string::npos) << cmd << ":\n" << r.out;
  }
}

// A linear layer's shape line at `tokens` (n), f32, 768 -> 768.
std::string linear_at(const std::string& tokens) {
  const GemmKey k = std::get<GemmKey>(parse_key("linear dtype=f32 tokens=" + tokens + " in=768 out=768"));
  return k.shape_line();
}

TEST(KdctlRecord, RecordedTokenCountsMergeIntoBuckets) {
  TempDir tmp;
  write_text(tmp.path() / "run.txt", linear_at("40") + "\n" + linear_at("50") + "\n" + linear_at("64") + "\n" +
                                         linear_at("100") + "\n" + linear_at("2") + "\n" + linear_at("40000") + "\n");
  const auto r = run_kdctl(tmp.path(), {"record", (tmp.path() / "run.txt").string()}, {"KD_BUCKETS=default"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto merged = entries(r.out);
  ASSERT_EQ(merged.size(), 4u) << r.out;
  EXPECT_EQ(merged[0], std::make_pair(3, linear_at("33..64")));
  EXPECT_EQ(merged[1], std::make_pair(1, linear_at("2")));  // alone in its bucket
  EXPECT_EQ(merged[2], std::make_pair(1, linear_at("40000")));  // above the last edge
  EXPECT_EQ(merged[3], std::make_pair(1, linear_at("65..128")));
  EXPECT_NE(r.out.find("buckets \"default\""), std::string::npos) << r.out;

  const auto vllm = run_kdctl(tmp.path(), {"record", "--buckets", "vllm", (tmp.path() / "run.txt").string()});
  ASSERT_EQ(vllm.rc, 0) << vllm.err;
  EXPECT_NE(vllm.out.find(linear_at("33..40")), std::string::npos) << vllm.out;
  EXPECT_NE(vllm.out.find(linear_at("49..56")), std::string::npos) << vllm.out;

  const auto bad = run_kdctl(tmp.path(), {"record", "--buckets", "64,32", (tmp.path() / "run.txt").string()});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("list edges in increasing order"), std::string::npos) << bad.err;
}

TEST(KdctlRecord, ABucketThatWouldOverlapAGivenRangeKeepsTheExactN) {
  TempDir tmp;
  write_text(tmp.path() / "a.txt", linear_at("33..48") + "\n" + linear_at("60") + "\n");
  const auto r = run_kdctl(tmp.path(), {"record", (tmp.path() / "a.txt").string()}, {"KD_BUCKETS=default"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto merged = entries(r.out);
  ASSERT_EQ(merged.size(), 2u) << r.out;
  EXPECT_EQ(merged[0].second, linear_at("33..48"));
  EXPECT_EQ(merged[1].second, linear_at("60"));
}

TEST(KdctlRecord, RecordedNJoinGivenRangesAndOverlappingRangesAreBadLines) {
  TempDir tmp;
  const auto file = tmp.path() / "overlap.txt";
  write_text(file, linear_at("33..64") + "\n" + linear_at("33..64") + "\n" + linear_at("40") + "\n" +
                       linear_at("60..70") + "\n" + linear_at("65..70") + "\n");
  const auto r = run_kdctl(tmp.path(), {"record", "--buckets", "off", file.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(file.string() + ":4: n=60..70 overlaps n=33..64 of an otherwise equal key at " +
                       file.string() + ":1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(":2:"), std::string::npos) << "the same range twice is one shape: " << r.err;
  EXPECT_EQ(r.err.find(":3:"), std::string::npos) << "a recorded n joins the range: " << r.err;
  EXPECT_EQ(r.err.find(":5:"), std::string::npos) << r.err;
  const auto merged = entries(r.out);
  ASSERT_EQ(merged.size(), 2u) << r.out;
  EXPECT_EQ(merged[0], std::make_pair(3, linear_at("33..64")));
  EXPECT_EQ(merged[1], std::make_pair(1, linear_at("65..70")));
}

TEST(KdctlRecord, ABucketedListMergesAgainWithNewRecordings) {
  TempDir tmp;
  const auto fleet = tmp.path() / "fleet.txt";
  write_text(tmp.path() / "run1.txt", linear_at("40") + "\n" + linear_at("100") + "\n");
  ASSERT_EQ(run_kdctl(tmp.path(), {"record", "--buckets", "default", (tmp.path() / "run1.txt").string(), "-o",
                                   fleet.string()}).rc, 0);
  write_text(tmp.path() / "run2.txt", linear_at("50") + "\n" + linear_at("300") + "\n");
  const auto r = run_kdctl(tmp.path(), {"record", "--buckets", "default", fleet.string(),
                                        (tmp.path() / "run2.txt").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto merged = entries(r.out);
  ASSERT_EQ(merged.size(), 3u) << r.out;
  EXPECT_EQ(merged[0], std::make_pair(2, linear_at("33..64")));
  EXPECT_EQ(merged[1], std::make_pair(1, linear_at("257..512")));
  EXPECT_EQ(merged[2], std::make_pair(1, linear_at("65..128")));
}

TEST(KdctlPrewarmList, InvertedAndOpenRangesAreUsageErrorsNamingFileAndLine) {
  TempDir tmp;
  const auto file = tmp.path() / "shapes.txt";
  write_text(file, linear_at("16") + "\nlinear dtype=f32 tokens=64..33 in=768 out=768\n"
                                     "linear dtype=f32 tokens=..64 in=768 out=768\n" +
                       linear_at("8..16") + "\n");
  const auto r = run_kdctl(tmp.path(), {"prewarm", file.string(), "--socket", (tmp.path() / "none.sock").string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find(file.string() + ":2: column 18: token 'tokens=64..33': the range is inverted (64 > 33): write "
                                       "tokens=33..64"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file.string() + ":3: column 18: token 'tokens=..64': a range needs both ends"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file.string() + ":4: n=8..16 overlaps n=16 of an otherwise equal key at " + file.string() + ":1"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kd::test

namespace kd::test {
namespace {

// Issue 33: row-operator lines merge by count as GEMM lines do, and stay exact under buckets.
TEST(KdctlRecord, RowOperatorLinesMergeAndStayExact) {
  TempDir tmp;
  const std::string layernorm = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1";
  write_text(tmp.path() / "a.txt", layernorm + "\n" + linear_at("40") + "\n");
  write_text(tmp.path() / "b.txt", "layernorm  dtype=f32 rows=4096 cols=1024 weight=1 bias=1 # calls=4\n");
  const auto r = run_kdctl(tmp.path(), {"record", (tmp.path() / "a.txt").string(), (tmp.path() / "b.txt").string()},
                           {"KD_BUCKETS=default"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("# calls=5\n" + layernorm + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(linear_at("33..64")), std::string::npos) << "the GEMM line is bucketed:\n" << r.out;

  write_text(tmp.path() / "bad.txt", "rmsnorm dtype=f32 rows=4 cols=8 weight=1 bias=1\n");
  const auto bad = run_kdctl(tmp.path(), {"record", (tmp.path() / "bad.txt").string()});
  EXPECT_EQ(bad.rc, 1);  // as for a bad GEMM line
  EXPECT_NE(bad.err.find("bad.txt:1: "), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace kd::test
