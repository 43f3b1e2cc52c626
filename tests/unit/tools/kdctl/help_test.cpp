// Every kdctl subcommand answers --help (exit 0, its usage and its flags), and an unknown one is a
// usage error (exit 2).
#include <gtest/gtest.h>

#include <string>

#include "commands.hpp"
#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

TEST(KdctlHelp, EverySubcommandHasHelp) {
  TempDir dir;
  ASSERT_GE(kdctl::commands().size(), 14u);
  for (const kdctl::Command& c : kdctl::commands()) {
    const std::string name(c.name);
    const KdctlRun r = run_kdctl(dir.path(), {name, "--help"});
    EXPECT_EQ(r.rc, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find("kdctl " + name + " [OPTIONS]"), std::string::npos) << name << ":\n" << r.out;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << name;
  }
}

// Issue 33: --help says which subcommands take row operators' keys and records: kdctl's own help,
// and each of those subcommands' help.
TEST(KdctlHelp, SaysWhichSubcommandsTakeRowOperators) {
  TempDir dir;
  const KdctlRun top = run_kdctl(dir.path(), {"--help"});
  EXPECT_EQ(top.rc, 0);
  EXPECT_NE(top.out.find("row operators' lines (rmsnorm, layernorm,"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("Only GEMM\nlines take ranges of n"), std::string::npos) << top.out;
  for (const char* name : {"search", "validate", "verify", "bench", "prewarm", "record", "ls", "show", "stats", "export",
                           "import", "evict", "cancel"}) {
    const KdctlRun r = run_kdctl(dir.path(), {name, "--help"});
    EXPECT_EQ(r.rc, 0) << name;
    const bool says = r.out.find("rmsnorm") != std::string::npos || r.out.find("row operator") != std::string::npos ||
                      r.out.find("row-operator") != std::string::npos || r.out.find("layernorm") != std::string::npos;
    EXPECT_TRUE(says) << name << " --help does not say it takes row operators:\n" << r.out;
  }
}

TEST(KdctlHelp, UnknownSubcommandIsAUsageError) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"nonsense"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace kd::test
