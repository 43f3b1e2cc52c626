// What SIGHUP applies (config_reload.hpp): the reloadable keys take their new values, the others
// are named as needing a restart and keep theirs; a flag still wins over the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "config/config.hpp"
#include "config/config_reload.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::optional<std::string> no_environment(const std::string&) { return std::nullopt; }

Config load(const std::filesystem::path& file, const std::string& text, const CommandLine& base = {}) {
  std::ofstream(file) << text;
  CommandLine line = base;
  line.config_file = file;
  return load_config(line, no_environment);
}

TEST(ConfigReload, AppliesReloadableKeysAndNamesTheOthers) {
  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  const std::string cache = "cache_dir = \"" + (dir.path() / "c").string() + "\"\n";
  Config live = load(file, cache + "max_clients = 10\nbudget_rounds = 4\nworkers = \"none\"\n");
  const Config fresh = load(file, cache + "max_clients = 3\nbudget_rounds = 7\nlog_level = \"debug\"\n"
                                          "workers = \"0\"\nsocket_mode = \"0660\"\n");
  const ReloadResult r = apply_reload(live, fresh);
  EXPECT_EQ(live.max_clients, 3u);
  EXPECT_EQ(live.budgets.rounds, 7u);
  EXPECT_EQ(live.log_level, "debug");
  EXPECT_EQ(live.workers, "none");      // not reloadable: unchanged
  EXPECT_EQ(live.socket_mode, 0600u);  // likewise
  EXPECT_EQ(r.applied, (std::vector<std::string>{"log_level = 'debug'", "budget_rounds = '7'", "max_clients = '3'"}));
  EXPECT_EQ(r.restart_needed, (std::vector<std::string>{"socket_mode", "workers"}));
  // The origins now hold the applied values, so an unchanged second reload applies nothing.
  const ReloadResult again = apply_reload(live, fresh);
  EXPECT_TRUE(again.applied.empty());
  EXPECT_EQ(again.restart_needed, r.restart_needed);
}

TEST(ConfigReload, TheGpuPolicyOfSearchesIsReloaded) {
  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  const std::string cache = "cache_dir = \"" + (dir.path() / "c").string() + "\"\n";
  Config live = load(file, cache);
  const ReloadResult r = apply_reload(live, load(file, cache + "search_duty_cycle = 0.3\nprewarm_duty_cycle = 0.9\n"));
  EXPECT_DOUBLE_EQ(live.search_policy.miss_duty_cycle, 0.3);
  EXPECT_DOUBLE_EQ(live.search_policy.prewarm_duty_cycle, 0.9);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"search_duty_cycle = '0.3'", "prewarm_duty_cycle = '0.9'"}));
  EXPECT_TRUE(r.restart_needed.empty());
}

TEST(ConfigReload, AFlagStillWinsOverTheReloadedFile) {
  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  CommandLine line;
  line.flags["max_clients"] = "5";
  Config live = load(file, "max_clients = 10\n", line);
  const ReloadResult r = apply_reload(live, load(file, "max_clients = 20\n", line));
  EXPECT_EQ(live.max_clients, 5u);
  EXPECT_TRUE(r.applied.empty());
}

TEST(ConfigReload, EveryReloadableKeyIsAConfigKey) {
  const auto keys = config_keys();
  for (const std::string& name : reloadable_keys())
    EXPECT_TRUE(std::any_of(keys.begin(), keys.end(), [&](const ConfigKeyInfo& k) { return k.name == name; })) << name;
}

}  // namespace
}  // namespace kd::daemon
