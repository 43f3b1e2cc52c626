// kdctl's exit codes: the shared table (common/exit_code.hpp) is the one README lists and --help
// prints; a filter value no record can have is a usage error; import into a directory without a
// cache refuses unless told to create one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/exit_code.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

namespace fs = std::filesystem;

TEST(ExitCodes, ReadmeListsTheTableOfTheCode) {
  const char* source_dir = std::getenv("KD_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "ctest sets KD_SOURCE_DIR to the source root";
  const std::string readme = read_text(fs::path(source_dir) / "README.md");
  const auto section = readme.find("\n## Exit codes\n");
  ASSERT_NE(section, std::string::npos);
  const auto next = readme.find("\n## ", section + 1);
  std::istringstream in(readme.substr(section, next == std::string::npos ? std::string::npos : next - section));
  std::string rows;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("| ") && line[2] >= '0' && line[2] <= '9') rows += line + "\n";
  std::string expected;
  for (const ExitCodeInfo& row : kExitCodes)
    expected += "| " + std::to_string(exit_status(row.code)) + " | " + std::string(row.meaning) + " |\n";
  EXPECT_EQ(rows, expected);
}

TEST(ExitCodes, KdctlHelpPrintsTheTable) {
  TempDir tmp;
  const KdctlRun r = run_kdctl(tmp.path(), {"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find(exit_codes_help()), std::string::npos) << r.out;
}

TEST(ExitCodes, LsFilterThatNoRecordCanHaveIsAUsageError) {
  TempDir tmp;
  make_test_cache(tmp.path() / "cache");
  const std::string cache = (tmp.path() / "cache").string();
  const KdctlRun dtype = run_kdctl(tmp.path(), {"ls", "--cache-dir", cache, "--dtype", "bf17"});
  EXPECT_EQ(dtype.rc, 2);
  for (const char* valid : {"f16", "bf16", "f32"})
    EXPECT_NE(dtype.err.find(valid), std::string::npos) << dtype.err;
  EXPECT_EQ(dtype.out, "");
  const KdctlRun op = run_kdctl(tmp.path(), {"ls", "--cache-dir", cache, "--op", "conv"});
  EXPECT_EQ(op.rc, 2);
  EXPECT_NE(op.err.find("gemm"), std::string::npos) << op.err;
  // A valid value that matches nothing here is a plain empty listing.
  const KdctlRun none = run_kdctl(tmp.path(), {"ls", "--cache-dir", cache, "--dtype", "f16"});
  EXPECT_EQ(none.rc, 0) << none.err;
  EXPECT_NE(none.out.find("0 record(s)"), std::string::npos) << none.out;
}

TEST(ExitCodes, ImportIntoADirectoryWithoutACacheNeedsCreate) {
  TempDir tmp;
  make_test_cache(tmp.path() / "source");
  const fs::path archive = tmp.path() / "h100.kda";
  ASSERT_EQ(run_kdctl(tmp.path(), {"export", "--cache-dir", (tmp.path() / "source").string(),
                                   "--gpu", "H100", "-o", archive.string()}).rc, 0);
  const fs::path typo = tmp.path() / "cahce";
  const KdctlRun refused = run_kdctl(tmp.path(), {"import", archive.string(), "--cache-dir", typo.string()});
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.err.find("no kdispatch cache at " + typo.string()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--create"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(typo));  // nothing was created
  // The environment's cache counts the same as the flag.
  const KdctlRun by_env = run_kdctl(tmp.path(), {"import", archive.string()}, {"KD_CACHE_DIR=" + typo.string()});
  EXPECT_EQ(by_env.rc, 1);
  EXPECT_FALSE(fs::exists(typo));

  const KdctlRun created = run_kdctl(tmp.path(), {"import", archive.string(), "--cache-dir",
                                                  typo.string(), "--create"});
  EXPECT_EQ(created.rc, 0) << created.err;
  EXPECT_TRUE(fs::exists(typo / "data.mdb"));
  // An existing cache needs no flag.
  EXPECT_EQ(run_kdctl(tmp.path(), {"import", archive.string(), "--cache-dir", typo.string()}).rc, 0);
}

}  // namespace
}  // namespace kd::test
