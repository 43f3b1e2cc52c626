// kdctl remote status|push|pull: the fleet's remote tier on Redis (issue 31;
// daemon/src/remote/). status shows what the tier holds (records, leases) and how the local
// kdispatchd sees it; push writes this cache's records to it; pull imports the tier's records for
// this machine into this cache, after this GPU's gate passed them unless --trusted.
// The tier is named by --remote, else KD_REMOTE, else the local daemon's `remote` setting.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cache_snapshot.hpp"
#include "ctl_client/ctl_client.hpp"
#include "commands.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "daemon_link.hpp"
#include "driver/winner_record.hpp"
#include "driver/worker_backend.hpp"
#include "eval/verdict.hpp"
#include "kdctl.hpp"
#include "remote/redis_link.hpp"
#include "remote/remote_value.hpp"
#include "store/cache_store.hpp"

namespace kd::kdctl {
namespace {

using daemon::RedisDown;
using daemon::RedisLink;
using daemon::Reply;

struct RemoteArgs {
  DaemonArgs daemon;
  std::string url;  // empty: KD_REMOTE, else the daemon's
  std::string user, password_env, password_file;
  std::string prefix = "kdispatch";
  int timeout_ms = 2000;
  std::string gpu;       // push/pull: only this GPU model's records (text contained in its name)
  bool trusted = false;  // pull: without this machine's gate
  bool create = false;   // pull: start a new cache
  int device = 0;        // pull: the GPU that runs the gate
};

constexpr std::size_t kChunk = 128;
constexpr std::size_t kListedAtMost = 20;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
}

// The endpoint and login, or an error already printed.
std::optional<daemon::RedisLogin> login_of(const char* cmd, const RemoteArgs& a) {
  std::string url = a.url;
  if (url.empty()) url = env("KD_REMOTE").value_or("");
  if (url.empty()) {
    try {
      const auto s = daemon::Client::status(socket_of(a.daemon));
      if (s.remote) url = s.remote->url;
    } catch (const std::exception&) {
      // no daemon to ask
    }
  }
  if (url.empty()) {
    std::fprintf(stderr, "kdctl remote %s: no remote tier named: pass --remote redis://HOST:PORT/DB (or set KD_REMOTE)\n",
                 cmd);
    return std::nullopt;
  }
  auto parsed = daemon::parse_remote_url(url);
  if (const auto* why = std::get_if<std::string>(&parsed)) {
    std::fprintf(stderr, "kdctl remote %s: --remote %s: %s\n", cmd, url.c_str(), why->c_str());
    return std::nullopt;
  }
  daemon::RemoteSettings s;
  s.password_env = a.password_env.empty() ? env("KD_REMOTE_PASSWORD_ENV").value_or("") : a.password_env;
  s.password_file = a.password_file.empty() ? env("KD_REMOTE_PASSWORD_FILE").value_or("") : a.password_file;
  daemon::RedisLogin l;
  l.endpoint = std::get<daemon::RemoteEndpoint>(parsed);
  l.user = a.user.empty() ? env("KD_REMOTE_USER").value_or("") : a.user;
  try {
    l.password = daemon::load_remote_password(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl remote %s: %s\n", cmd, e.what());
    return std::nullopt;
  }
  l.timeout = std::chrono::milliseconds(a.timeout_ms);
  return l;
}

// Every key under `pattern` (SCAN: never blocks the server as KEYS would).
std::vector<std::string> scan(RedisLink& link, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    const Reply r = link.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (r.kind != Reply::Kind::array || r.elements.size() != 2) throw RedisDown("Redis: unexpected reply to SCAN");
    cursor = r.elements[0].text;
    for (const Reply& k : r.elements[1].elements) keys.push_back(k.text);
  } while (cursor != "0");
  return keys;
}

int run_status(const RemoteArgs& a) {
  const auto login = login_of("status", a);
  if (!login) return kUsage;
  std::printf("remote tier %s (prefix \"%s\")\n", login->endpoint.url().c_str(), a.prefix.c_str());
  int rc = kOk;
  try {
    RedisLink link(*login);
    const std::size_t records = scan(link, a.prefix + ":record:*").size();
    const auto leases = scan(link, a.prefix + ":lease:*");
    const std::size_t done = scan(link, a.prefix + ":done:*").size();
    std::printf("  reachable: %zu record(s), %zu search(es) under lease, %zu key(s) searched without a winner\n",
                records, leases.size(), done);
    for (std::size_t i = 0; i < leases.size() && i < kListedAtMost; ++i) {
      const auto replies = link.pipeline({{"GET", leases[i]}, {"PTTL", leases[i]}});
      std::printf("  lease: %s by %s (%lld ms left)\n", leases[i].substr(a.prefix.size() + 7).c_str(),
                  replies[0].text.c_str(), replies[1].integer);
    }
  } catch (const std::exception& e) {
    std::printf("  unreachable: %s\n", e.what());
    rc = kFailure;
  }
  try {
    const auto s = daemon::Client::status(socket_of(a.daemon));
    if (!s.remote) {
      std::printf("kdispatchd (%s): no remote tier configured\n", socket_of(a.daemon).c_str());
    } else {
      const protocol::RemoteStatus& r = *s.remote;
      std::printf("kdispatchd (%s): %s, trust %s, gate %s\n", socket_of(a.daemon).c_str(),
                  r.connected ? "connected" : ("not connected: " + r.last_error).c_str(), r.trust.c_str(),
                  r.gate.c_str());
      std::printf("  %s\n", nlohmann::json(r.counters).dump().c_str());
    }
  } catch (const std::exception&) {
    std::printf("kdispatchd: not reachable on %s\n", socket_of(a.daemon).c_str());
  }
  return rc;
}

bool gpu_matches(const std::string& key_line, const std::string& gpu) {
  if (gpu.empty()) return true;
  const auto parts = split_op_key(key_line);  // any operator's key (issue 33)
  return parts && parts->device.gpu.find(gpu) != std::string::npos;
}

int run_push(const RemoteArgs& a) {
  const auto login = login_of("push", a);
  if (!login) return kUsage;
  const auto dir = resolve_cache_dir(a.daemon.cache_dir);
  std::vector<Record> records;
  std::size_t damaged = 0;
  {
    CacheSnapshot snap(dir);
    for (StoredRecord& s : snap.records()) {
      if (auto* r = std::get_if<Record>(&s.record)) {
        if (gpu_matches(r->key_line, a.gpu)) records.push_back(std::move(*r));
      } else {
        ++damaged;
        std::printf("skipped (damaged in this cache: %s): %s\n", std::string(to_string(std::get<RecordError>(s.record))).c_str(),
                    s.key_line.c_str());
      }
    }
  }
  try {
    RedisLink link(*login);
    for (std::size_t at = 0; at < records.size(); at += kChunk) {
      std::vector<std::string> names, values;
      for (std::size_t i = at; i < std::min(records.size(), at + kChunk); ++i) {
        names.push_back(daemon::remote_record_key(a.prefix, records[i].key_line));
        values.push_back(daemon::encode_remote_value(records[i]));
      }
      std::vector<std::vector<std::string_view>> commands;
      for (std::size_t i = 0; i < names.size(); ++i) commands.push_back({"SET", names[i], values[i]});
      for (const Reply& r : link.pipeline(commands))
        if (r.kind == Reply::Kind::error) throw RedisDown("Redis refused a record: " + r.text);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl remote push: %s\n", e.what());
    return kFailure;
  }
  std::printf("pushed %zu record(s) from %s to %s%s\n", records.size(), dir.c_str(), login->endpoint.url().c_str(),
              damaged > 0 ? fmt::format(" ({} damaged skipped)", damaged).c_str() : "");
  return kOk;
}

int run_pull(const RemoteArgs& a) {
  const auto login = login_of("pull", a);
  if (!login) return kUsage;
  std::optional<DeviceInfo> gpu;
  if (cu_device_count() > a.device) gpu = query_device(a.device);
  if (!a.trusted && !gpu) {
    std::fprintf(stderr,
                 "kdctl remote pull: records from the tier are used only after this machine's gate passed them, "
                 "and the gate needs a GPU (%s): run it on a GPU machine, or pass --trusted if every daemon "
                 "writing to this Redis is trusted\n",
                 cu_unavailable_reason().empty() ? "no such device" : cu_unavailable_reason().c_str());
    return kNoGpu;
  }
  const auto dir = resolve_cache_dir(a.daemon.cache_dir);
  if (!a.create && !std::filesystem::exists(dir / "data.mdb")) {
    std::fprintf(stderr, "kdctl remote pull: no kdispatch cache at %s (no data.mdb there), nothing pulled: check "
                         "--cache-dir or KD_CACHE_DIR, or pass --create to start a new cache there\n",
                 dir.c_str());
    return kFailure;
  }
  std::optional<DevicePart> here;
  if (gpu) here = DevicePart{gpu->arch, gpu->name, gpu->sms};
  const daemon::LocalEnvironment local = daemon::local_environment(here);
  std::vector<Record> usable;
  std::map<std::string, std::size_t> refused;
  std::size_t listed = 0, seen = 0;
  const auto refuse = [&](std::string_view reason, const std::string& line) {
    ++refused[std::string(reason)];
    if (listed++ < kListedAtMost) std::printf("skipped (%s): %s\n", std::string(reason).c_str(), line.c_str());
  };
  try {
    RedisLink link(*login);
    const auto keys = scan(link, a.prefix + ":record:*");
    for (std::size_t at = 0; at < keys.size(); at += kChunk) {
      std::vector<std::vector<std::string_view>> commands;
      for (std::size_t i = at; i < std::min(keys.size(), at + kChunk); ++i) commands.push_back({"GET", keys[i]});
      const auto replies = link.pipeline(commands);
      for (std::size_t i = 0; i < replies.size(); ++i) {
        const auto line = daemon::key_line_of_remote_key(a.prefix, keys[at + i]);
        if (!line || replies[i].kind != Reply::Kind::string) continue;
        if (!gpu_matches(*line, a.gpu) || (here && !gpu_matches(*line, here->gpu))) continue;
        ++seen;
        auto decoded = daemon::decode_remote_value(replies[i].text, *line, local);
        if (auto* r = std::get_if<Record>(&decoded)) usable.push_back(std::move(*r));
        else if (auto* no = std::get_if<daemon::RemoteRejection>(&decoded)) refuse(to_string(*no), *line);
        else refuse(to_string(std::get<daemon::RemoteMismatch>(decoded)), *line);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl remote pull: %s\n", e.what());
    return kFailure;
  }
  if (!a.trusted && !usable.empty()) {
    search::WorkerBackend backend(worker::default_worker_spawn(a.device, dir), std::chrono::seconds(60));
    std::vector<Record> passed;
    for (Record& r : usable) {
      const eval::Verdict v = backend.evaluate(search::evaluation_request(r));
      if (v.correct()) passed.push_back(std::move(r));
      else refuse(fmt::format("failed_gate: {}", eval::to_string(v.rule)), r.key_line);
    }
    usable = std::move(passed);
  }
  std::vector<std::string> written;
  if (!usable.empty()) {
    CacheWriter writer(dir);
    for (const Record& r : usable) {
      writer.commit_record(r);
      written.push_back(r.key_line);
    }
  }
  std::size_t total_refused = 0;
  for (const auto& [reason, n] : refused) total_refused += n;
  if (listed > kListedAtMost) std::printf("... and %zu more skipped\n", listed - kListedAtMost);
  std::printf("pulled %zu of %zu record(s) from %s into %s%s; %zu skipped", written.size(), seen,
              login->endpoint.url().c_str(), dir.c_str(), a.trusted ? " (trusted, not verified)" : " (verified on this GPU)",
              total_refused);
  for (const auto& [reason, n] : refused) std::printf(", %zu %s", n, reason.c_str());
  std::printf("\n");
  if (!written.empty()) {
    const DaemonNotice notice = tell_daemon_cache_changed(socket_of(a.daemon), dir, written);
    std::printf("%s\n", notice.line.c_str());
  }
  return kOk;
}

void add_remote_flags(CLI::App& sub, RemoteArgs& a) {
  add_daemon_flags(sub, a.daemon);
  sub.add_option("--remote", a.url, "The tier, redis://HOST:PORT/DB (default: KD_REMOTE, else the local daemon's)");
  sub.add_option("--remote-user", a.user, "Redis ACL user (default: KD_REMOTE_USER)");
  sub.add_option("--password-env", a.password_env,
                 "Environment variable holding the Redis password (default: KD_REMOTE_PASSWORD_ENV)");
  sub.add_option("--password-file", a.password_file,
                 "File holding the Redis password, mode 0600 or 0400 (default: KD_REMOTE_PASSWORD_FILE)");
  sub.add_option("--prefix", a.prefix, "Prefix of the tier's keys (the daemons' remote_prefix)");
  sub.add_option("--timeout-ms", a.timeout_ms, "Connect and command timeout")->check(CLI::Range(10, 600000));
}

}  // namespace

void setup_remote(CLI::App& sub, std::function<int()>& action) {
  sub.require_subcommand(1);
  auto a = std::make_shared<RemoteArgs>();
  auto* status = sub.add_subcommand("status", "What the tier holds (records, leases) and how kdispatchd sees it");
  add_remote_flags(*status, *a);
  run_when_chosen(*status, action, a, run_status);
  auto* push = sub.add_subcommand("push", "Write this cache's records to the tier");
  add_remote_flags(*push, *a);
  push->add_option("--gpu", a->gpu, "Only records of the GPU model whose name contains this text");
  run_when_chosen(*push, action, a, run_push);
  auto* pull = sub.add_subcommand("pull", "Import the tier's records for this machine into this cache");
  add_remote_flags(*pull, *a);
  pull->add_option("--gpu", a->gpu, "Only records of the GPU model whose name contains this text");
  pull->add_flag("--trusted", a->trusted,
                 "Import without this machine's gate (every daemon writing to this Redis is trusted)");
  pull->add_flag("--create", a->create, "Start a new cache in --cache-dir when it holds none");
  pull->add_option("--device", a->device, "CUDA device that runs the gate (default 0)");
  pull->footer("Each value is checked fully (checksum, record decode, key, GPU, driver and cuBLAS versions); one\n"
               "that fails is skipped by name, never the whole pull. Without --trusted each record must pass this\n"
               "GPU's validation gate (as kdctl verify runs it) before it is written; with a GPU present only its\n"
               "model's records are pulled. Exit codes: 0 pulled, 1 unreachable tier or no cache, 2 usage,\n"
               "4 no GPU for the gate (pass --trusted to skip it).\n");
  run_when_chosen(*pull, action, a, run_pull);
  sub.footer("The tier is named by --remote, else KD_REMOTE, else the remote setting of the kdispatchd on\n"
             "--socket. Credentials come from a variable or a file, never from the URL.\n");
}

}  // namespace kd::kdctl
