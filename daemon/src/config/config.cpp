#include "config/config.hpp"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "common/error.hpp"
#include "common/exit_code.hpp"
#include "config/config_reload.hpp"
#include "driver/proposer_table.hpp"
#include "store/cache_store.hpp"

namespace kd::daemon {
namespace {

// A parser stores `text` into the config or returns why it cannot.
using Parser = std::optional<std::string> (*)(Config&, const std::string& text);

struct ConfigKey {
  std::string_view name;
  std::string_view env;
  std::string_view default_text;
  std::string_view description;
  Parser parse;
};

template <class T>
std::optional<T> parse_unsigned(const std::string& text, int base = 10) {
  T value{};
  const auto* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, value, base);
  if (text.empty() || res.ec != std::errc{} || res.ptr != end) return std::nullopt;
  return value;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

template <class T, T Config::*Field>
std::optional<std::string> unsigned_into(Config& c, const std::string& text) {
  const auto v = parse_unsigned<T>(text);
  if (!v) return "expected a non-negative integer";
  c.*Field = *v;
  return std::nullopt;
}

template <std::uint64_t Budgets::*Field>
std::optional<std::string> budget_into(Config& c, const std::string& text) {
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v) return "expected a non-negative integer";
  c.budgets.*Field = *v;
  return std::nullopt;
}

// A share of a GPU's time: a decimal in (0, 1] ("0.1", "1"; TOML floats arrive as their text).
template <double SearchPolicy::*Field>
std::optional<std::string> duty_cycle_into(Config& c, const std::string& text) {
  double v = 0;
  const auto* end = text.data() + text.size();
  const auto res = std::from_chars(text.data(), end, v, std::chars_format::fixed);
  if (text.empty() || res.ec != std::errc{} || res.ptr != end || !(v > 0.0) || v > 1.0)
    return "expected a share of the GPU's time above 0 and at most 1 (0.1 = a tenth; 1 = full speed)";
  c.search_policy.*Field = v;
  return std::nullopt;
}

template <std::chrono::milliseconds Config::*Field>
std::optional<std::string> millis_into(Config& c, const std::string& text) {
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v || *v == 0) return "expected a positive number of milliseconds";
  c.*Field = std::chrono::milliseconds(*v);
  return std::nullopt;
}

std::optional<std::string> parse_backup_interval(Config& c, const std::string& text) {
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v) return "expected a number of seconds (0 turns compact copies off)";
  c.backup_interval = std::chrono::seconds(*v);
  return std::nullopt;
}

template <std::chrono::seconds Config::*Field>
std::optional<std::string> seconds_into(Config& c, const std::string& text) {
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v || *v > std::uint64_t{1} << 40) return "expected a number of seconds (0: never)";
  c.*Field = std::chrono::seconds(*v);
  return std::nullopt;
}

// At most three quarters of the LMDB map (lmdb::EnvOptions), which also holds jobs and trees.
std::optional<std::string> parse_max_cache_bytes(Config& c, const std::string& text) {
  const std::uint64_t most = lmdb::EnvOptions{}.map_size_bytes / 4 * 3;
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v) return "expected a number of bytes (0: no limit)";
  if (*v > most) return fmt::format("at most {} bytes (three quarters of the cache's LMDB map)", most);
  c.max_cache_bytes = *v;
  return std::nullopt;
}

std::optional<std::string> parse_max_queued_jobs(Config& c, const std::string& text) {
  const auto v = parse_unsigned<std::uint64_t>(text);
  if (!v || *v == 0) return "expected a positive number of jobs";
  c.max_queued_jobs = *v;
  return std::nullopt;
}

template <std::string Config::*Field>
std::optional<std::string> text_into(Config& c, const std::string& text) {
  c.*Field = text;
  return std::nullopt;
}

std::optional<std::string> parse_cache_dir(Config& c, const std::string& text) {
  c.cache_dir = text.empty() ? default_cache_dir() : std::filesystem::path(text);
  return std::nullopt;
}

// Resolved after cache_dir (the table is applied in order, cache_dir first).
std::optional<std::string> parse_socket(Config& c, const std::string& text) {
  if (!text.empty()) {
    c.socket = text;
  } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
    c.socket = std::filesystem::path(x) / "kdispatch.sock";
  } else {
    c.socket = c.cache_dir / "kdispatch.sock";
  }
  return std::nullopt;
}

std::optional<std::string> parse_socket_mode(Config& c, const std::string& text) {
  const auto v = parse_unsigned<unsigned>(text, 8);
  if (!v || *v > 0777) return "expected an octal file mode such as 0600";
  c.socket_mode = *v;
  return std::nullopt;
}

std::optional<std::string> parse_allowed_uids(Config& c, const std::string& text) {
  c.allowed_uids.clear();
  if (text.empty()) {
    c.allowed_uids = {::geteuid(), 0};
    return std::nullopt;
  }
  for (const auto& item : split_list(text)) {
    const auto v = parse_unsigned<uid_t>(item);
    if (!v) return fmt::format("'{}' is not a numeric uid", item);
    c.allowed_uids.push_back(*v);
  }
  if (c.allowed_uids.empty()) return "expected a comma list of numeric uids";
  return std::nullopt;
}

// A group name or numeric gid. Read after socket_mode: members connect only through the file's
// group bits, so a mode without them would refuse every member with a bare "permission denied".
std::optional<std::string> parse_allowed_group(Config& c, const std::string& text) {
  c.allowed_gid.reset();
  if (text.empty()) return std::nullopt;
  if (const auto gid = parse_unsigned<gid_t>(text)) {
    c.allowed_gid = *gid;
  } else {
    std::vector<char> buffer(16384);
    struct group entry {};
    struct group* found = nullptr;
    const int rc = ::getgrnam_r(text.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (rc != 0 || found == nullptr)
      return fmt::format("no group named '{}' on this machine: create it (the packaged "
                         "sysusers.d file does, or groupadd --system {}) or give a numeric gid",
                         text, text);
    c.allowed_gid = found->gr_gid;
  }
  if ((c.socket_mode & 0060) != 0060)
    return fmt::format("socket_mode 0{:o} gives the group no read and write on the socket: set "
                       "socket_mode to 0660 as well",
                       c.socket_mode);
  return std::nullopt;
}

std::optional<std::string> parse_metrics_listen(Config& c, const std::string& text) {
  if (text != "off") {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || !parse_unsigned<std::uint16_t>(text.substr(colon + 1)))
      return "expected host:port (port 0 picks a free one) or off";
    const auto host = text.substr(0, colon);
    if (host != "127.0.0.1" && host != "::1" && host != "[::1]" && host != "localhost")
      return "the metrics endpoint listens on loopback only (127.0.0.1, ::1 or localhost)";
  }
  c.metrics_listen = text;
  return std::nullopt;
}

std::optional<std::string> parse_path_text(Config& c, const std::string& text) {
  c.metrics_port_file = text;
  return std::nullopt;
}

std::optional<std::string> parse_log_level(Config& c, const std::string& text) {
  static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn",
                                                 "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), text) == std::end(kLevels))
    return "expected trace, debug, info, warn, error, critical or off";
  c.log_level = text;
  return std::nullopt;
}

std::optional<std::string> parse_workers(Config& c, const std::string& text) {
  if (text != "auto" && text != "none") {
    const auto items = split_list(text);
    if (items.empty()) return "expected auto, none or a comma list of CUDA device ordinals";
    for (const auto& item : items)
      if (!parse_unsigned<unsigned>(item)) return fmt::format("'{}' is not a device ordinal", item);
  }
  c.workers = text;
  return std::nullopt;
}

// The buckets of token counts a miss queues (key/n_buckets.hpp).
std::optional<std::string> parse_buckets(Config& c, const std::string& text) {
  auto parsed = NBuckets::parse(text);
  if (auto* err = std::get_if<std::string>(&parsed)) return *err + " (default, vllm, off or a list of edges)";
  c.buckets = std::get<NBuckets>(std::move(parsed));
  return std::nullopt;
}

// A comma list of proposers (search/src/driver/proposer_table.hpp): "builtin,cublaslt".
std::optional<std::string> parse_proposer(Config& c, const std::string& text) {
  auto names = search::parse_proposer_list(text);
  if (auto* err = std::get_if<std::string>(&names)) return *err;
  c.proposer = text;
  return std::nullopt;
}

std::optional<std::string> parse_llm_api(Config& c, const std::string& text) {
  if (text != "openai" && text != "anthropic") return "expected openai or anthropic";
  c.llm_api = text;
  return std::nullopt;
}

// The table. Order matters only where a parser reads an earlier key (socket reads cache_dir).
constexpr ConfigKey kConfigKeys[] = {
    {"cache_dir", "KD_CACHE_DIR", "",
     "kernel cache directory (empty: $XDG_CACHE_HOME/kdispatch or ~/.cache/kdispatch)",
     parse_cache_dir},
    {"socket", "KD_SOCKET", "",
     "Unix socket path (empty: $XDG_RUNTIME_DIR/kdispatch.sock, else <cache_dir>/kdispatch.sock)",
     parse_socket},
    {"socket_mode", "KD_SOCKET_MODE", "0600", "permissions of the socket file (octal)",
     parse_socket_mode},
    {"allowed_uids", "KD_ALLOWED_UIDS", "",
     "peer uids accepted (SO_PEERCRED), comma list (empty: the daemon's own uid and root)",
     parse_allowed_uids},
    {"allowed_group", "KD_ALLOWED_GROUP", "",
     "group (name or gid) whose members may use the socket and read the cache; needs "
     "socket_mode 0660 (empty: none)",
     parse_allowed_group},
    {"metrics_listen", "KD_METRICS_LISTEN", "127.0.0.1:9464",
     "loopback host:port of the HTTP endpoint (/metrics, /status), or off", parse_metrics_listen},
    {"metrics_port_file", "KD_METRICS_PORT_FILE", "",
     "file to write the bound metrics port into (useful with port 0)", parse_path_text},
    {"log_level", "KD_LOG_LEVEL", "info", "spdlog level", parse_log_level},
    {"workers", "KD_WORKERS", "auto",
     "GPUs to search on, one runner and kdispatch-worker each: auto (every GPU), none, or a comma list of "
     "device ordinals (0,0 runs two searches on GPU 0)",
     parse_workers},
    {"compile_threads", "KD_COMPILE_THREADS", "0", "CPU compile pool size (0: one per core)",
     unsigned_into<unsigned, &Config::compile_threads>},
    {"budget_rounds", "KD_BUDGET_ROUNDS", "8", "search rounds per job",
     budget_into<&Budgets::rounds>},
    {"budget_candidates", "KD_BUDGET_CANDIDATES", "256", "candidates evaluated per job",
     budget_into<&Budgets::candidates>},
    {"budget_wall_seconds", "KD_BUDGET_WALL_SECONDS", "600", "wall-clock seconds per job",
     budget_into<&Budgets::wall_seconds>},
    {"budget_llm_tokens", "KD_BUDGET_LLM_TOKENS", "200000", "LLM tokens per job",
     budget_into<&Budgets::llm_tokens>},
    {"search_duty_cycle", "KD_SEARCH_DUTY_CYCLE", "0.1",
     "share of its GPU's time a search started by an application's miss may take: it pauses between "
     "evaluations to stay under it, so the application keeps its speed (1: full speed)",
     duty_cycle_into<&SearchPolicy::miss_duty_cycle>},
    {"prewarm_duty_cycle", "KD_PREWARM_DUTY_CYCLE", "1",
     "share of its GPU's time a search queued by kdctl prewarm may take (1: full speed)",
     duty_cycle_into<&SearchPolicy::prewarm_duty_cycle>},
    {"proposer", "KD_PROPOSER", "builtin",
     "default proposers, a comma list of builtin, llm, cublaslt (builtin always runs)",
     parse_proposer},
    {"llm_api", "KD_LLM_API", "openai",
     "LLM wire API: openai (chat completions: vLLM, llama.cpp, Ollama, SGLang) or anthropic", parse_llm_api},
    {"llm_url", "KD_LLM_URL", "http://127.0.0.1:8000", "LLM base URL, without /v1/...",
     text_into<&Config::llm_url>},
    {"llm_model", "KD_LLM_MODEL", "", "LLM model name (needed for proposer llm)",
     text_into<&Config::llm_model>},
    {"llm_key_env", "KD_LLM_KEY_ENV", "", "environment variable holding the LLM API key",
     text_into<&Config::llm_key_env>},
    {"llm_key_file", "KD_LLM_KEY_FILE", "",
     "file holding the LLM API key (mode 0600 or 0400, owned by the daemon's user)",
     text_into<&Config::llm_key_file>},
    {"frame_timeout_ms", "KD_FRAME_TIMEOUT_MS", "5000",
     "a client that leaves a frame incomplete this long is dropped",
     millis_into<&Config::frame_timeout>},
    {"max_clients", "KD_MAX_CLIENTS", "1024", "connections served at once; more are refused",
     unsigned_into<std::size_t, &Config::max_clients>},
    {"max_client_backlog_bytes", "KD_MAX_CLIENT_BACKLOG_BYTES", "8388608",
     "unsent reply bytes a client may accumulate before it is dropped as not reading",
     unsigned_into<std::size_t, &Config::max_client_backlog_bytes>},
    {"restart_backoff_ms", "KD_RESTART_BACKOFF_MS", "1000",
     "first delay before retrying a job whose worker crashed or hung (doubles per attempt)",
     millis_into<&Config::restart_backoff>},
    {"max_attempts", "KD_MAX_ATTEMPTS", "3", "runs of a job before it is marked failed",
     unsigned_into<std::uint32_t, &Config::max_attempts>},
    {"backup_interval_s", "KD_BACKUP_INTERVAL_S", "1800",
     "seconds between compact copies of the cache (data.mdb.backup, also written at a clean shutdown and "
     "restored when data.mdb is found damaged); 0: no copies",
     parse_backup_interval},
    {"max_cache_bytes", "KD_MAX_CACHE_BYTES", "4294967296",
     "records above this size are evicted, least recently used first, down to 90% (0: no limit)",
     parse_max_cache_bytes},
    {"job_retention_s", "KD_JOB_RETENTION_S", "604800",
     "finished jobs (done, failed, cancelled) unchanged this long are purged (0: kept)",
     seconds_into<&Config::job_retention>},
    {"max_queued_jobs", "KD_MAX_QUEUED_JOBS", "100000",
     "queued jobs at most; a new one beyond takes the place of a lower-priority one or is dropped",
     parse_max_queued_jobs},
    {"buckets", "KD_BUCKETS", "default",
     "what a miss for an untuned token count n queues (issue 29): its bucket's range of n. default (powers "
     "of two to 64, then doubling to 16384), vllm (vLLM's capture sizes 1, 2, 4, 8..512 by 8), off (each n "
     "alone) or a list of edges: E, A..B+STEP, A..B*FACTOR",
     parse_buckets},
    {"maintenance_interval_ms", "KD_MAINTENANCE_INTERVAL_MS", "60000",
     "how often usage reports are stored, old jobs purged and the cache size checked",
     millis_into<&Config::maintenance_interval>},
    // The fleet's remote tier (issue 31; parsers in remote/remote_settings.cpp).
    {"remote", "KD_REMOTE", "",
     "the fleet's Redis, redis://HOST:PORT/DB, shared by every daemon of the fleet (empty: no remote tier)",
     parse_remote},
    {"remote_user", "KD_REMOTE_USER", "", "Redis ACL user for AUTH (empty: the password alone, or none)",
     parse_remote_user},
    {"remote_password_env", "KD_REMOTE_PASSWORD_ENV", "",
     "environment variable holding the Redis password (never logged or stored)", parse_remote_password_env},
    {"remote_password_file", "KD_REMOTE_PASSWORD_FILE", "",
     "file holding the Redis password (mode 0600 or 0400, owned by the daemon's user)",
     parse_remote_password_file},
    {"remote_prefix", "KD_REMOTE_PREFIX", "kdispatch", "prefix of every key the tier writes in Redis",
     parse_remote_prefix},
    {"remote_trust", "KD_REMOTE_TRUST", "verify",
     "records from the tier: verify (published only after this machine's gate passed them; needs a GPU) "
     "or trusted (published at once)",
     parse_remote_trust},
    {"remote_lease_ms", "KD_REMOTE_LEASE_MS", "30000",
     "a search's lease on its key in Redis (renewed every third of it; a dead searcher's job moves on after it)",
     parse_remote_lease_ms},
    {"remote_poll_ms", "KD_REMOTE_POLL_MS", "1000",
     "how often queued keys are looked up in the tier again (waiting for another daemon's search)",
     parse_remote_poll_ms},
    {"remote_timeout_ms", "KD_REMOTE_TIMEOUT_MS", "250", "connect and command timeout towards Redis",
     parse_remote_timeout_ms},
};

std::string flag_of(std::string_view name) {
  std::string flag = "--" + std::string(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// A TOML value as the text its key's parser reads; nullopt for tables and other shapes.
std::optional<std::string> toml_text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* a = node.as_array()) {
    std::string joined;
    for (const auto& element : *a) {
      const auto text = toml_text(element);
      if (!text || element.is_array()) return std::nullopt;
      if (!joined.empty()) joined += ',';
      joined += *text;
    }
    return joined;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ConfigSource s) {
  static constexpr std::string_view kNames[] = {"default", "file", "env", "flag"};
  return kNames[static_cast<int>(s)];
}

std::optional<std::string> process_environment(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::vector<ConfigKeyInfo> config_keys() {
  std::vector<ConfigKeyInfo> out;
  static std::vector<std::string> flags;  // keeps the flag strings alive for the views
  if (flags.empty())
    for (const auto& k : kConfigKeys) flags.push_back(flag_of(k.name));
  for (std::size_t i = 0; i < std::size(kConfigKeys); ++i) {
    const auto& k = kConfigKeys[i];
    out.push_back({k.name, k.env, flags[i], k.default_text, k.description});
  }
  return out;
}

std::variant<CommandLine, int> parse_command_line(int argc, char** argv) {
  CLI::App app{"kdispatchd: the kdispatch daemon (queues missed shapes, searches, publishes)"};
  CommandLine line;
  std::string config_file;
  app.add_option("--config", config_file,
                 std::string("TOML configuration file (env KD_CONFIG; default ") +
                     kDefaultConfigFile + ")");
  app.add_flag("--print-config", line.print_config,
               "Print every configuration value and where it came from, then exit");
  app.add_flag("--version", line.version, "Print the version and exit");
  app.footer(fmt::format("Signals: SIGTERM or SIGINT stop gracefully (as `kdctl stop`); SIGHUP never stops the "
                         "daemon: it reloads the configuration and applies {} (other keys at a restart).",
                         fmt::join(reloadable_keys(), ", ")));
  std::map<std::string, std::string> values;
  for (const auto& k : kConfigKeys) {
    const std::string name(k.name);
    app.add_option(flag_of(k.name), values[name],
                   fmt::format("{} (env {}, default '{}')", k.description, k.env, k.default_text));
  }
  static constexpr ExitCode kDaemonExitCodes[] = {ExitCode::ok, ExitCode::failure, ExitCode::usage};
  app.footer(exit_codes_help(kDaemonExitCodes));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (109 for an unknown flag, ...) are not ours: --help is success, the rest
    // is a usage error, as in kdctl.
    return app.exit(e) == 0 ? exit_status(ExitCode::ok) : exit_status(ExitCode::usage);
  }
  if (!config_file.empty()) line.config_file = config_file;
  for (const auto& k : kConfigKeys) {
    if (app.get_option(flag_of(k.name))->count() > 0)
      line.flags[std::string(k.name)] = values[std::string(k.name)];
  }
  return line;
}

namespace {

// load_config of the keys `wanted` admits (all when it is empty); the others keep Config's
// defaults. A default configuration file that cannot be read is skipped when only some keys are
// wanted: kdctl, run by a user, may not read the daemon's /etc file.
Config load_selected(const CommandLine& line,
                     const std::function<std::optional<std::string>(const std::string&)>& environment,
                     std::span<const std::string_view> wanted) {
  const auto is_wanted = [&](std::string_view name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
  };
  // Per key: the winning text and its source, from lowest to highest precedence.
  std::map<std::string, Config::Origin, std::less<>> chosen;
  for (const auto& k : kConfigKeys)
    chosen[std::string(k.name)] = {std::string(k.name), std::string(k.default_text),
                                   ConfigSource::default_value, ""};

  Config c;
  std::filesystem::path file = kDefaultConfigFile;
  bool explicit_file = false;
  if (line.config_file) {
    file = *line.config_file;
    explicit_file = true;
  } else if (const auto env_file = environment("KD_CONFIG"); env_file && !env_file->empty()) {
    file = *env_file;
    explicit_file = true;
  }
  const bool readable = ::access(file.c_str(), R_OK) == 0;
  if (explicit_file || (std::filesystem::exists(file) && (readable || wanted.empty()))) {
    toml::table table;
    try {
      table = toml::parse_file(file.string());
    } catch (const toml::parse_error& e) {
      throw Error(ErrorDomain::usage, 0,
                  fmt::format("config file {}: {}", file.string(), std::string(e.description())));
    }
    for (const auto& [name, node] : table) {
      const auto it = chosen.find(std::string_view(name.str()));
      if (it == chosen.end())
        throw Error(ErrorDomain::usage, 0,
                    fmt::format("config file {}: unknown key '{}' (kdispatchd --help lists them)",
                                file.string(), name.str()));
      const auto text = toml_text(node);
      if (!text)
        throw Error(ErrorDomain::usage, 0,
                    fmt::format("config file {}: key '{}' must be a string, integer or array",
                                file.string(), name.str()));
      it->second = {it->first, *text, ConfigSource::file, file.string()};
    }
    c.config_file = file;
  }
  for (const auto& k : kConfigKeys) {
    if (const auto v = environment(std::string(k.env)))
      chosen[std::string(k.name)] = {std::string(k.name), *v, ConfigSource::environment,
                                     std::string(k.env)};
  }
  for (const auto& [name, value] : line.flags)
    chosen[name] = {name, value, ConfigSource::flag, flag_of(name)};

  for (const auto& k : kConfigKeys) {
    if (!is_wanted(k.name)) continue;
    const auto& origin = chosen.at(std::string(k.name));
    if (const auto problem = k.parse(c, origin.text)) {
      throw Error(ErrorDomain::usage, 0,
                  fmt::format("config key {} = '{}' (from {}{}{}): {}", k.name, origin.text,
                              to_string(origin.source), origin.where.empty() ? "" : " ",
                              origin.where, *problem));
    }
    c.origins.push_back(origin);
  }
  return c;
}

}  // namespace

Config load_config(const CommandLine& line,
                   const std::function<std::optional<std::string>(const std::string&)>& environment) {
  return load_selected(line, environment, {});
}

Config load_shared_config(std::span<const std::string_view> keys, const CommandLine& line,
                          const std::function<std::optional<std::string>(const std::string&)>& environment) {
  return load_selected(line, environment, keys);
}

search::ProposerSettings proposer_settings(const Config& c) {
  search::ProposerSettings s;
  s.llm_api = c.llm_api;
  s.llm_url = c.llm_url;
  s.llm_model = c.llm_model;
  s.llm_key_env = c.llm_key_env;
  s.llm_key_file = c.llm_key_file;
  s.llm_tokens = c.budgets.llm_tokens;
  return s;
}

std::string print_config(const Config& c) {
  std::string out;
  if (!c.config_file.empty()) out += fmt::format("# config file: {}\n", c.config_file.string());
  for (const auto& o : c.origins) {
    std::string where = std::string(to_string(o.source));
    if (!o.where.empty()) where += " " + o.where;
    out += fmt::format("{} = \"{}\"  # {}\n", o.key, o.text, where);
  }
  out += fmt::format("# resolved: cache_dir={} socket={}\n", c.cache_dir.string(), c.socket.string());
  return out;
}

}  // namespace kd::daemon
