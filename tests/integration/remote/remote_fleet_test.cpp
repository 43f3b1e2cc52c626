// Real kdispatchd processes (three, on separate cache directories) sharing one real redis-server:
// a record imported into one daemon (kdctl import) reaches the others that missed its key and
// their subscribed clients; Redis killed and brought back leaves them serving and they catch up;
// 10,000 garbage values never take a daemon down; kdctl remote status, push and pull; the password
// never shows in logs, status or --print-config. (No GPU here: the daemons have no search backend,
// so the exactly-once search is tested in remote_tier_test.cpp with the daemon's own scheduler.)
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "redis_server.hpp"
#include "remote/redis_link.hpp"
#include "remote/remote_value.hpp"
#include "store/cache_store.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using namespace std::chrono_literals;
using daemon::Client;
using nlohmann::json;

std::filesystem::path made(const std::filesystem::path& p) {
  std::filesystem::create_directories(p);
  return p;
}

std::string fleet_toml(const RedisServer& redis, const std::string& extra = "") {
  return "workers = \"none\"\nremote = \"" + redis.url() +
         "\"\nremote_trust = \"trusted\"\nremote_poll_ms = 50\nremote_prefix = \"fleet\"\n" + extra;
}

Record record_for(const std::string& line) {
  Record r;
  r.key_line = line;
  r.cubin = std::string(2048, 'c');
  r.proposer = "builtin";
  const daemon::LocalEnvironment here = daemon::local_environment(std::nullopt);
  r.driver_version = here.driver_version;
  r.cublas_version = static_cast<int>(here.cublaslt_version);
  return r;
}

// An archive of `keys`' records, written by the real kdctl export from a cache of its own.
std::filesystem::path archive_of(const std::filesystem::path& dir, const std::vector<std::string>& keys) {
  const auto src = dir / "source-cache";
  {
    CacheWriter w(src);
    for (const auto& k : keys) w.commit_record(record_for(k));
  }
  const auto file = dir / "records.kdar";
  const auto r = run_kdctl(dir, {"export", "--cache-dir", src.string(), "-o", file.string()});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  std::filesystem::remove_all(src);
  return file;
}

void miss(const DaemonProcess& d, const std::vector<std::string>& keys) {
  Client c(d.socket());
  json list = json::array();
  for (const auto& k : keys) list.push_back({{"key", k}, {"count", 1}});
  ASSERT_EQ(c.request({{"type", "miss"}, {"keys", list}, {"ack", true}}).at("type"), "ok");
}

// The daemon's remote tier as its status reply shows it.
protocol::RemoteStatus remote_of(const DaemonProcess& d) { return Client::status(d.socket()).remote.value(); }

std::string job_state(const DaemonProcess& d, const std::string& key) {
  Client c(d.socket());
  const json r = c.request({{"type", "jobs"}, {"keys", json::array({key})}});
  return r.at("jobs").at(0).value("state", "unknown");
}

bool cached(const DaemonProcess& d, const std::string& key) {
  CacheReader reader(d.cache_dir());
  reader.refresh();
  return std::holds_alternative<Record>(reader.lookup(key));
}

daemon::RedisLink link_to(const RedisServer& redis) {
  daemon::RedisLogin l;
  l.endpoint = std::get<daemon::RemoteEndpoint>(daemon::parse_remote_url(redis.url()));
  return daemon::RedisLink(l);
}

TEST(RemoteFleet, ARecordImportedIntoOneDaemonReachesTheOthersAndTheirClients) {
  TempDir dir;
  RedisServer redis(dir.path() / "redis");
  DaemonProcess a(made(dir.path() / "a"), {}, fleet_toml(redis));
  DaemonProcess b(made(dir.path() / "b"), {}, fleet_toml(redis));
  DaemonProcess c(made(dir.path() / "c"), {}, fleet_toml(redis));
  const std::string k = test_key(16);
  miss(b, {k});
  miss(c, {k});
  Client subscriber(b.socket());
  ASSERT_EQ(subscriber.request({{"type", "subscribe"}}).at("type"), "ok");

  const auto imported = run_kdctl(dir.path(), {"import", archive_of(dir.path(), {k}).string(), "--cache-dir",
                                                     a.cache_dir().string(), "--socket", a.socket().string()});
  ASSERT_EQ(imported.rc, 0) << imported.out << imported.err;
  ASSERT_TRUE(eventually([&] { return job_state(b, k) == "done" && job_state(c, k) == "done"; }))
      << b.log() << c.log();
  EXPECT_TRUE(cached(b, k));
  EXPECT_TRUE(cached(c, k));
  bool notified = false;
  for (int i = 0; i < 50 && !notified; ++i) {
    const auto frame = subscriber.receive(200ms);
    notified = frame && frame->value("type", "") == "published" && frame->value("key", "") == k;
  }
  EXPECT_TRUE(notified) << "b's subscribed client hears of the record without a search";
  const protocol::RemoteStatus status = remote_of(b);
  EXPECT_EQ(status.counters.counts.at("imports"), 1u) << json(status).dump();
  EXPECT_EQ(remote_of(a).counters.counts.at("pushes"), 1u);
  const std::string metrics = http_get(b.metrics_port(), "/metrics");
  EXPECT_NE(metrics.find("kdispatch_remote_imports_total 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kdispatch_remote_connected 1"), std::string::npos);
}

TEST(RemoteFleet, RedisDownLeavesEveryDaemonServingAndTheyCatchUpWhenItReturns) {
  TempDir dir;
  RedisServer redis(dir.path() / "redis");
  DaemonProcess a(made(dir.path() / "a"), {}, fleet_toml(redis));
  DaemonProcess b(made(dir.path() / "b"), {}, fleet_toml(redis));
  ASSERT_TRUE(eventually([&] { return remote_of(a).connected; }));
  redis.kill();
  const std::string k = test_key(32);
  miss(b, {k});
  const auto imported = run_kdctl(dir.path(), {"import", archive_of(dir.path(), {k}).string(), "--cache-dir",
                                                     a.cache_dir().string(), "--socket", a.socket().string()});
  ASSERT_EQ(imported.rc, 0) << imported.out << imported.err;
  EXPECT_TRUE(cached(a, k)) << "the local cache took the record while Redis is down";
  ASSERT_TRUE(eventually([&] { return !remote_of(a).connected; }));
  EXPECT_TRUE(eventually([&] { return remote_of(a).pending_pushes == 1; }));
  EXPECT_EQ(job_state(b, k), "queued");
  redis.start();  // back on the same port, empty
  ASSERT_TRUE(eventually([&] { return job_state(b, k) == "done"; })) << a.log() << b.log();
  EXPECT_TRUE(cached(b, k));
  EXPECT_TRUE(a.running() && b.running());
  EXPECT_GE(remote_of(a).counters.counts.at("outages"), 1u);
}

TEST(RemoteFleet, TenThousandGarbageValuesNeverTakeADaemonDown) {
  TempDir dir;
  RedisServer redis(dir.path() / "redis");
  auto link = link_to(redis);
  std::mt19937_64 rng(3131);
  const std::string valid = daemon::encode_remote_value(record_for(test_key(1)));
  std::vector<std::string> keys, names, values;
  for (int i = 0; i < 10000; ++i) {
    keys.push_back(test_key(100 + i));
    names.push_back(daemon::remote_record_key("fleet", keys.back()));
    if (i % 2 == 0) {
      std::string junk(rng() % 300, '\0');
      for (char& ch : junk) ch = static_cast<char>(rng());
      values.push_back(std::move(junk));
    } else {
      values.push_back(valid.substr(0, rng() % valid.size()));
    }
  }
  for (std::size_t at = 0; at < names.size(); at += 1000) {
    std::vector<std::vector<std::string_view>> sets;
    for (std::size_t i = at; i < at + 1000; ++i) sets.push_back({"SET", names[i], values[i]});
    link.pipeline(sets);
  }
  const std::string good = test_key(50);
  link.command({"SET", daemon::remote_record_key("fleet", good), daemon::encode_remote_value(record_for(good))});

  DaemonProcess d(made(dir.path() / "d"), {}, fleet_toml(redis));
  for (std::size_t at = 0; at < 2000; at += 500) miss(d, {keys.begin() + at, keys.begin() + at + 500});
  miss(d, {good});
  ASSERT_TRUE(eventually([&] { return job_state(d, good) == "done"; })) << d.log();
  ASSERT_TRUE(eventually([&] {
    std::uint64_t total = 0;
    for (const auto& [reason, n] : remote_of(d).counters.rejected) total += n;
    return total == 2000;
  })) << json(remote_of(d)).dump();
  EXPECT_TRUE(d.running());

  // kdctl remote pull reads all 10,001 values, skips each bad one by name and imports the good one.
  const auto pulled = run_kdctl(dir.path(), {"remote", "pull", "--trusted", "--remote", redis.url(), "--prefix",
                                                   "fleet", "--cache-dir", (dir.path() / "pulled").string(), "--create",
                                                   "--socket", (dir.path() / "none.sock").string()});
  EXPECT_EQ(pulled.rc, 0) << pulled.out << pulled.err;
  EXPECT_NE(pulled.out.find("pulled 1 of 10001 record(s)"), std::string::npos) << pulled.out;
  EXPECT_NE(pulled.out.find("10000 skipped"), std::string::npos) << pulled.out;
  EXPECT_TRUE(d.running());
}

TEST(RemoteFleet, KdctlRemoteStatusPushAndPull) {
  TempDir dir;
  RedisServer redis(dir.path() / "redis");
  DaemonProcess a(made(dir.path() / "a"), {}, fleet_toml(redis));
  const std::vector<std::string> keys{test_key(7), test_key(8)};
  {
    // Records a's cache holds before the fleet existed (kdctl import with the daemon told).
    const auto r = run_kdctl(dir.path(), {"import", archive_of(dir.path(), keys).string(), "--cache-dir",
                                                a.cache_dir().string(), "--socket", a.socket().string()});
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
  }
  link_to(redis).command({"FLUSHDB"});  // the tier forgets them
  const auto push = run_kdctl(dir.path(), {"remote", "push", "--cache-dir", a.cache_dir().string(), "--socket",
                                                 a.socket().string(), "--prefix", "fleet"});
  ASSERT_EQ(push.rc, 0) << push.out << push.err;
  EXPECT_NE(push.out.find("pushed 2 record(s)"), std::string::npos) << push.out;

  const auto status = run_kdctl(dir.path(), {"remote", "status", "--socket", a.socket().string(), "--prefix",
                                                   "fleet"});
  EXPECT_EQ(status.rc, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("reachable: 2 record(s)"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(redis.url()), std::string::npos) << "the URL comes from the daemon's status";

  // Without a GPU, pull refuses to import unverified records unless told the tier is trusted.
  const auto refused = run_kdctl(dir.path(), {"remote", "pull", "--remote", redis.url(), "--prefix", "fleet",
                                                    "--cache-dir", (dir.path() / "b").string(), "--create"},
                                       {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(refused.rc, 4) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--trusted"), std::string::npos) << refused.err;

  redis.kill();
  const auto down = run_kdctl(dir.path(), {"remote", "status", "--remote", redis.url(), "--socket",
                                                 (dir.path() / "none.sock").string()});
  EXPECT_EQ(down.rc, 1) << down.out << down.err;
  EXPECT_NE(down.out.find("unreachable"), std::string::npos) << down.out;
}

TEST(RemoteFleet, ThePasswordComesFromAFileAndNeverShows) {
  TempDir dir;
  const std::string secret = "s3cret-fleet-password-31";
  RedisServer redis(dir.path() / "redis", 0, {"--requirepass", secret});
  const auto file = dir.path() / "redis.password";
  std::ofstream(file) << secret << "\n";
  ::chmod(file.c_str(), 0600);
  DaemonProcess d(made(dir.path() / "d"), {}, fleet_toml(redis, "remote_password_file = \"" + file.string() + "\"\n"));
  ASSERT_TRUE(eventually([&] { return remote_of(d).connected; })) << d.log();
  const std::string k = test_key(9);
  {
    daemon::RedisLogin l;
    l.endpoint = std::get<daemon::RemoteEndpoint>(daemon::parse_remote_url(redis.url()));
    l.password = secret;
    daemon::RedisLink link(l);
    link.command({"SET", daemon::remote_record_key("fleet", k), daemon::encode_remote_value(record_for(k))});
  }
  miss(d, {k});
  ASSERT_TRUE(eventually([&] { return job_state(d, k) == "done"; })) << d.log();
  const auto printed = run_daemon_command({"--config", (dir.path() / "d" / "kdispatchd.toml").string(),
                                                 "--print-config"});
  for (const std::string& text : {d.log(), protocol::to_payload(Client::status(d.socket())), printed.output,
                                  http_get(d.metrics_port(), "/metrics"),
                                  http_get(d.metrics_port(), "/status")})
    EXPECT_EQ(text.find(secret), std::string::npos) << text;
  // A URL with credentials is refused at start, with the fix.
  const auto refused = run_daemon_command(
      {"--config", (dir.path() / "d" / "kdispatchd.toml").string(), "--remote", "redis://user:pw@127.0.0.1:1/0",
       "--print-config"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("remote_password_file"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace kd::test
