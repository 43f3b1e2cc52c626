// Configuration precedence (flag > env > file > default), sources, and value checks.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "common/error.hpp"
#include "config/config.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  std::optional<std::string> operator()(const std::string& name) const {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
};

const Config::Origin& origin(const Config& c, const std::string& key) {
  for (const auto& o : c.origins)
    if (o.key == key) return o;
  throw std::runtime_error("no key " + key);
}

TEST(Config, PrecedenceFlagEnvFileDefault) {
  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  std::ofstream(file) << "budget_rounds = 4\nbudget_candidates = 10\nproposer = \"llm\"\n"
                         "socket_mode = \"0660\"\nallowed_uids = [1000, 0]\n";
  CommandLine line;
  line.config_file = file;
  line.flags["budget_rounds"] = "2";
  const Env env{{{"KD_BUDGET_ROUNDS", "3"}, {"KD_BUDGET_CANDIDATES", "20"},
                 {"KD_CACHE_DIR", (dir.path() / "c").string()}}};
  const Config c = load_config(line, env);
  EXPECT_EQ(c.budgets.rounds, 2u);
  EXPECT_EQ(origin(c, "budget_rounds").source, ConfigSource::flag);
  EXPECT_EQ(c.budgets.candidates, 20u);
  EXPECT_EQ(origin(c, "budget_candidates").source, ConfigSource::environment);
  EXPECT_EQ(c.proposer, "llm");
  EXPECT_EQ(origin(c, "proposer").source, ConfigSource::file);
  EXPECT_EQ(c.socket_mode, 0660u);
  EXPECT_EQ(c.allowed_uids, (std::vector<uid_t>{1000, 0}));
  EXPECT_EQ(c.budgets.wall_seconds, 600u);
  EXPECT_EQ(origin(c, "budget_wall_seconds").source, ConfigSource::default_value);
  EXPECT_EQ(c.cache_dir, dir.path() / "c");
  EXPECT_FALSE(c.socket.empty());
  const std::string printed = print_config(c);
  EXPECT_NE(printed.find("budget_rounds = \"2\"  # flag --budget-rounds"), std::string::npos) << printed;
}

TEST(Config, InvalidValuesNameKeyAndSource) {
  CommandLine line;
  line.config_file = "/nonexistent/kd.toml";
  EXPECT_THROW(load_config(line, Env{}), Error);  // an explicit file must exist
  line.config_file.reset();
  const auto message = [&](Env env) {
    try {
      load_config(line, env);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(Env{{{"KD_CONFIG", "/dev/null"}, {"KD_SOCKET_MODE", "999"}}}).find("socket_mode"), std::string::npos);
  EXPECT_NE(message(Env{{{"KD_CONFIG", "/dev/null"}, {"KD_METRICS_LISTEN", "0.0.0.0:80"}}}).find("loopback"), std::string::npos);
  EXPECT_NE(message(Env{{{"KD_CONFIG", "/dev/null"}, {"KD_ALLOWED_UIDS", "root"}}}).find("env KD_ALLOWED_UIDS"), std::string::npos);
  EXPECT_NE(message(Env{{{"KD_CONFIG", "/dev/null"}, {"KD_WORKERS", "0,x"}}}).find("workers"), std::string::npos);
}

// Issue 29 item 4: the GPU policy of searches, a share of the GPU's time by the job's origin.
TEST(Config, DutyCyclesAreSharesOfTheGpuTime) {
  const Config defaults = load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}}});
  EXPECT_DOUBLE_EQ(defaults.search_policy.miss_duty_cycle, 0.1);
  EXPECT_DOUBLE_EQ(defaults.search_policy.prewarm_duty_cycle, 1.0);

  test::TempDir dir;
  const auto file = dir.path() / "kd.toml";
  std::ofstream(file) << "search_duty_cycle = 0.25\nprewarm_duty_cycle = 1\n";  // a TOML float and an integer
  CommandLine line;
  line.config_file = file;
  const Config from_file = load_config(line, Env{});
  EXPECT_DOUBLE_EQ(from_file.search_policy.miss_duty_cycle, 0.25);
  EXPECT_DOUBLE_EQ(from_file.search_policy.prewarm_duty_cycle, 1.0);
  line.flags["prewarm_duty_cycle"] = "0.5";
  EXPECT_DOUBLE_EQ(load_config(line, Env{}).search_policy.prewarm_duty_cycle, 0.5);

  const auto message = [](const std::string& value) {
    try {
      load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}, {"KD_SEARCH_DUTY_CYCLE", value}}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const std::string bad : {"0", "1.5", "-0.1", "a tenth", "", "0.1x", "nan"})
    EXPECT_NE(message(bad).find("search_duty_cycle"), std::string::npos) << "'" << bad << "': " << message(bad);
  EXPECT_NE(message("0").find("above 0 and at most 1"), std::string::npos);
  EXPECT_EQ(message("0.05"), "no error");
}

TEST(Config, BoundsHaveDefaultsAndLimits) {
  const Env defaults{{{"KD_CONFIG", "/dev/null"}}};
  const Config c = load_config(CommandLine{}, defaults);
  EXPECT_EQ(c.max_cache_bytes, std::uint64_t{4} << 30);
  EXPECT_EQ(c.job_retention, std::chrono::hours(24 * 7));
  EXPECT_EQ(c.max_queued_jobs, 100000u);
  EXPECT_EQ(c.maintenance_interval, std::chrono::minutes(1));
  const auto message = [&](const std::string& var, const std::string& value) {
    Env env = defaults;
    env.vars[var] = value;
    try {
      load_config(CommandLine{}, env);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("KD_MAX_CACHE_BYTES", "99999999999999").find("three quarters"), std::string::npos);
  EXPECT_NE(message("KD_MAX_QUEUED_JOBS", "0").find("max_queued_jobs"), std::string::npos);
  EXPECT_NE(message("KD_JOB_RETENTION_S", "7d").find("seconds"), std::string::npos);
  EXPECT_EQ(message("KD_JOB_RETENTION_S", "0"), "no error");  // 0 keeps finished jobs
  EXPECT_EQ(message("KD_MAX_CACHE_BYTES", "0"), "no error");  // 0: no limit
}

TEST(Config, DefaultAllowedUidsAreSelfAndRoot) {
  const Config c = load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}}});
  EXPECT_EQ(c.allowed_uids, (std::vector<uid_t>{::geteuid(), 0}));
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(config_keys().size(), c.origins.size());
}


TEST(Config, ProposerIsACommaListOfKnownProposers) {
  const Config c = load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}, {"KD_PROPOSER", "builtin,cublaslt"}}});
  EXPECT_EQ(c.proposer, "builtin,cublaslt");
  std::string error = "no error";
  try {
    load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}, {"KD_PROPOSER", "builtin,cublas"}}});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("KD_PROPOSER"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown proposer 'cublas'"), std::string::npos) << error;
}

TEST(Config, BucketsDefaultToPowersOfTwoAndNameABadSpec) {
  const Config d = load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}}});
  EXPECT_EQ(d.buckets, NBuckets::standard());
  const Config v = load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}, {"KD_BUCKETS", "vllm"}}});
  EXPECT_EQ(v.buckets.edges().size(), 67u);
  std::string error = "no error";
  try {
    load_config(CommandLine{}, Env{{{"KD_CONFIG", "/dev/null"}, {"KD_BUCKETS", "8..64"}}});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("KD_BUCKETS"), std::string::npos) << error;
  EXPECT_NE(error.find("a run needs a step"), std::string::npos) << error;
}

}  // namespace
}  // namespace kd::daemon
