// kdispatchd's configuration: one table of keys (config.cpp, kConfigKeys), each settable in the
// TOML file, by a KD_* environment variable and by a flag. Precedence: flag > environment >
// file > default. `kdispatchd --print-config` prints every value with where it came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <sys/types.h>

#include "driver/proposer_table.hpp"
#include "key/n_buckets.hpp"
#include "remote/remote_settings.hpp"

namespace kd::daemon {

enum class ConfigSource { default_value, file, environment, flag };
std::string_view to_string(ConfigSource s);

struct Budgets {
  std::uint64_t rounds = 0;
  std::uint64_t candidates = 0;
  std::uint64_t wall_seconds = 0;
  std::uint64_t llm_tokens = 0;
  // The share of its GPU's time a search's evaluations may take, in (0, 1] (a run's effective
  // budget: the scheduler sets it from SearchPolicy by the job's origin; 1 is full speed).
  double duty_cycle = 1.0;
};

// The GPU policy of searches (issue 29 item 4): how much of its GPU's time a search may take, by
// who queued the job. A search started by an application's miss runs beside that application, so
// it pauses between evaluations to stay under its share (sched/duty_cycle.hpp).
struct SearchPolicy {
  double miss_duty_cycle = 0.1;     // search_duty_cycle
  double prewarm_duty_cycle = 1.0;  // prewarm_duty_cycle
};

struct Config {
  std::filesystem::path cache_dir;
  std::filesystem::path socket;  // resolved: never empty after load_config
  unsigned socket_mode = 0600;
  std::vector<uid_t> allowed_uids;  // resolved: never empty after load_config
  // The group whose members may use the socket and read the cache (server/peer_access.hpp);
  // nullopt when allowed_group is empty.
  std::optional<gid_t> allowed_gid;
  std::string metrics_listen;       // "host:port" or "off"
  std::filesystem::path metrics_port_file;
  std::string log_level;
  std::string workers;  // "auto", "none" or a comma list of CUDA device ordinals
  unsigned compile_threads = 0;
  Budgets budgets;
  SearchPolicy search_policy;
  std::string proposer;  // comma list of proposers (driver/proposer_table.hpp); builtin always runs
  // The llm proposer (proposer = llm, or a job asking for it).
  std::string llm_api;       // openai | anthropic
  std::string llm_url;       // base URL without /v1/...
  std::string llm_model;
  std::string llm_key_env;   // environment variable holding the key
  std::string llm_key_file;  // or a file (mode 0600/0400, owned by the daemon's user)
  std::chrono::milliseconds frame_timeout{0};
  std::size_t max_clients = 0;
  std::size_t max_client_backlog_bytes = 0;
  std::chrono::milliseconds restart_backoff{0};
  std::uint32_t max_attempts = 0;
  std::chrono::seconds backup_interval{0};  // compact copies of the cache; 0: none
  // Bounds (nothing grows without them): records by least-recent use, finished jobs by age,
  // queued jobs by number; checked every maintenance_interval (sched/maintenance.hpp).
  std::uint64_t max_cache_bytes = 0;   // 0: no limit
  std::chrono::seconds job_retention{0};  // 0: finished jobs are kept
  std::uint64_t max_queued_jobs = 0;
  std::chrono::milliseconds maintenance_interval{0};
  // Issue 29: what a miss for an untuned n queues (queue/miss_buckets.hpp).
  NBuckets buckets;
  // The fleet's shared tier (issue 31; remote/remote_tier.hpp): off while remote.endpoint is empty.
  RemoteSettings remote;

  // Each key's text as loaded and where it came from, in table order (for --print-config).
  struct Origin {
    std::string key;
    std::string text;
    ConfigSource source = ConfigSource::default_value;
    std::string where;  // file path, variable or flag name
  };
  std::vector<Origin> origins;
  std::filesystem::path config_file;  // the file read, empty when none
};

// Where the configuration file is looked for when neither --config nor KD_CONFIG names one.
inline constexpr const char* kDefaultConfigFile = "/etc/kdispatch/kdispatchd.toml";

// The options of the command line that are not config keys.
struct CommandLine {
  std::optional<std::filesystem::path> config_file;
  bool print_config = false;
  bool version = false;
  std::map<std::string, std::string> flags;  // config key -> value given by its flag
};

// Parses argv (CLI11). Returns the process exit code when the command line asked for help (ok) or
// was wrong (usage; common/exit_code.hpp), the message already printed; else the parsed line.
std::variant<CommandLine, int> parse_command_line(int argc, char** argv);

// Builds the configuration. `environment` is looked up by variable name (tests pass a map).
// Throws kd::Error (usage) naming the key, its source and the problem for an invalid value, an
// unknown key in the file, or an unreadable file that was asked for explicitly.
Config load_config(const CommandLine& line,
                   const std::function<std::optional<std::string>(const std::string&)>& environment);
std::optional<std::string> process_environment(const std::string& name);

// The keys kdctl shares with kdispatchd, resolved exactly as load_config resolves them (the same
// table, environment variables, file and precedence; `line.flags` holds kdctl's own flags for
// them), for tools that act like the daemon without being it (kdctl search builds its proposers
// from the llm_* keys). Only `keys` (non-empty) are parsed and validated; the rest keep Config's
// zero values. A default file that this user cannot read is skipped. Throws as load_config.
Config load_shared_config(std::span<const std::string_view> keys, const CommandLine& line,
                          const std::function<std::optional<std::string>(const std::string&)>& environment);

// The settings proposers are built with (driver/proposer_table.hpp): the llm_* keys and
// budget_llm_tokens.
search::ProposerSettings proposer_settings(const Config& c);

// key = value  # source, one line per key, in table order.
std::string print_config(const Config& c);

// For the documentation and --help: name, environment variable, flag, default and description.
struct ConfigKeyInfo {
  std::string_view name, env, flag, default_text, description;
};
std::vector<ConfigKeyInfo> config_keys();

}  // namespace kd::daemon
