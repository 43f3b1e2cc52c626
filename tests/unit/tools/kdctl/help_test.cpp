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

TEST(KdctlHelp, UnknownSubcommandIsAUsageError) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"nonsense"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace kd::test
