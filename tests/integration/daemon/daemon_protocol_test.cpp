// The real kdispatchd on a temporary socket and cache: protocol, deduplication, peers, shutdown.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using daemon::Client;
using nlohmann::json;

std::uint64_t job_count(const protocol::Status& status, const std::string& key) {
  for (const auto& j : status.top_jobs.value())
    if (j.key == key) return j.count.value();
  return 0;
}

TEST(DaemonProtocol, HelloStatusAndNoSearchBackend) {
  HiddenGpus no_gpu;  // asserts the daemon's behaviour without a search backend
  TempDir dir;
  DaemonProcess d(dir.path());
  struct stat st{};
  ASSERT_EQ(::stat(d.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Client c(d.socket());
  const json hello = c.request({{"type", "hello"}, {"pid", ::getpid()}, {"client", "test"}});
  EXPECT_EQ(hello.at("type"), "hello_ok");
  EXPECT_EQ(hello.at("version"), 1);
  EXPECT_EQ(hello.at("generation"), 0);

  const json status = c.request({{"type", "status"}});
  ASSERT_EQ(status.at("type"), "status");
  EXPECT_FALSE(status.at("search_backend").at("available").get<bool>());
  EXPECT_NE(status.at("search_backend").at("message").get<std::string>().find("no search backend"),
            std::string::npos);
  EXPECT_EQ(status.at("queue_depth"), 0);
  ASSERT_TRUE(status.at("runners").is_array());
  EXPECT_TRUE(status.at("runners").empty()) << "no GPU, no search runner";
}

TEST(DaemonProtocol, ConcurrentClientsDeduplicateByKey) {
  TempDir dir;
  DaemonProcess d(dir.path());
  constexpr int kClients = 24, kSharedMisses = 100, kOwnKeys = 10;
  const std::string shared = test_key(16);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      try {
        Client c(d.socket());
        for (int i = 0; i < kSharedMisses; i += 10) {
          json keys = json::array();
          for (int b = 0; b < 10; ++b) keys.push_back({{"key", shared}, {"count", 1}});
          const json r = c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}});
          if (r.at("type") != "ok" || r.at("accepted") != 10) ++failures;
        }
        for (int k = 0; k < kOwnKeys; ++k) {
          // Each own key is sent twice, once with extra blanks: same canonical key, one job.
          const std::string key = test_key(1000 + t * kOwnKeys + k);
          c.send({{"type", "miss"}, {"key", key}, {"count", 2}});
          const json r = c.request({{"type", "miss"}, {"key", "  " + key + "  "}, {"count", 3}, {"ack", true}});
          if (r.at("type") != "ok") ++failures;
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);

  const protocol::Status status = Client::status(d.socket(), 1000);
  EXPECT_EQ(status.jobs.queued, 1u + kClients * kOwnKeys);
  EXPECT_EQ(job_count(status, shared), std::uint64_t{kClients * kSharedMisses});
  for (int t = 0; t < kClients; ++t)
    EXPECT_EQ(job_count(status, test_key(1000 + t * kOwnKeys)), 5u);
  // Group commit: far fewer transactions than acknowledged requests.
  EXPECT_LT(status.transactions_committed, std::uint64_t{kClients * (kSharedMisses / 10 + kOwnKeys * 2)});

  // The queue is persistent: a graceful restart shows the same jobs.
  const int wait_status = d.stop(SIGTERM);
  ASSERT_TRUE(WIFEXITED(wait_status));
  EXPECT_EQ(WEXITSTATUS(wait_status), 0);
  EXPECT_FALSE(std::filesystem::exists(d.socket()));
  DaemonProcess again(dir.path());
  const protocol::Status after = Client::status(again.socket(), 1000);
  EXPECT_EQ(after.jobs.queued, 1u + kClients * kOwnKeys);
  EXPECT_EQ(job_count(after, shared), std::uint64_t{kClients * kSharedMisses});
}

TEST(DaemonProtocol, BadKeysAreRejectedNotFatal) {
  TempDir dir;
  DaemonProcess d(dir.path());
  Client c(d.socket());
  const json r = c.request({{"type", "miss"},
                            {"keys", {{{"key", test_key(8)}, {"count", 1}}, {{"key", "gemm m=banana"}}}},
                            {"ack", true}});
  EXPECT_EQ(r.at("type"), "ok");
  EXPECT_EQ(r.at("accepted"), 1);
  ASSERT_EQ(r.at("rejected").size(), 1u);
  EXPECT_EQ(c.request({{"type", "status"}}).at("queue_depth"), 1);
}

TEST(DaemonProtocol, PrewarmAndCancel) {
  HiddenGpus no_gpu;  // asserts the daemon's behaviour without a search backend
  TempDir dir;
  DaemonProcess d(dir.path());
  Client c(d.socket());
  const std::string shape =
      "linear dtype=bf16 tokens=16 in=4096 out=4096";
  const json r = c.request({{"type", "prewarm"},
                            {"keys", {test_key(32), shape, "not a key"}},
                            {"proposer", "builtin"},
                            {"budgets", {{"rounds", 2}}}});
  ASSERT_EQ(r.at("type"), "ok") << r.dump();
  EXPECT_EQ(r.at("queued"), 2);
  EXPECT_EQ(r.at("rejected").size(), 1u);
  EXPECT_EQ(c.request({{"type", "cancel"}, {"key", test_key(32)}}).at("cancelled"), true);
  EXPECT_EQ(c.request({{"type", "cancel"}, {"key", test_key(32)}}).at("cancelled"), false);
  const json s = c.request({{"type", "status"}});
  EXPECT_EQ(s.at("jobs").at("cancelled"), 1);
  EXPECT_EQ(s.at("jobs").at("queued"), 1);
  // Prewarm re-queues a cancelled job.
  EXPECT_EQ(c.request({{"type", "prewarm"}, {"keys", {test_key(32)}}}).at("queued"), 1);
  EXPECT_EQ(c.request({{"type", "status"}}).at("jobs").at("queued"), 2);
}

// Issue 29: misses for untuned n queue their bucket's range (one job per bucket); prewarm queues
// ranges and exact keys as sent; the jobs request answers for range keys.
TEST(DaemonProtocol, MissesQueueBucketsAndPrewarmTakesRanges) {
  test::HiddenGpus no_gpu;
  test::TempDir dir;
  DaemonProcess d(dir.path(), {"--buckets", "default"});
  Client c(d.socket());
  const auto key_n = [](const std::string& n) {
    std::string k = test_key(1);
    k.replace(k.find(" n=1 "), 5, " n=" + n + " ");
    return k;
  };
  json misses = json::array();
  for (const char* n : {"40", "41", "64", "100", "2"}) misses.push_back({{"key", key_n(n)}, {"count", 1}});
  ASSERT_EQ(c.request({{"type", "miss"}, {"keys", misses}, {"ack", true}}).at("accepted"), 5);
  const json p = c.request({{"type", "prewarm"}, {"keys", {key_n("129..256"), key_n("300")}}});
  ASSERT_EQ(p.at("queued"), 2) << p.dump();
  const json bad = c.request({{"type", "prewarm"}, {"keys", {key_n("256..129")}}});
  ASSERT_EQ(bad.at("rejected").size(), 1u);
  EXPECT_NE(bad.at("rejected")[0].at("message").get<std::string>().find("the range is inverted"), std::string::npos);

  const json jobs = c.request({{"type", "jobs"},
                               {"keys", {key_n("33..64"), key_n("65..128"), key_n("2"), key_n("40"),
                                         key_n("129..256"), key_n("300")}}});
  const auto& list = jobs.at("jobs");
  ASSERT_EQ(list.size(), 6u) << jobs.dump();
  EXPECT_EQ(list[0].at("state"), "queued");
  EXPECT_EQ(list[0].at("count"), 3) << "n=40, 41 and 64 are one job";
  EXPECT_EQ(list[1].at("state"), "queued");
  EXPECT_EQ(list[2].at("state"), "queued") << "n=2 is alone in its bucket";
  EXPECT_EQ(list[3].at("state"), "unknown") << "no job of n=40's own";
  EXPECT_EQ(list[4].at("state"), "queued");
  EXPECT_EQ(list[5].at("state"), "queued");
  EXPECT_EQ(c.request({{"type", "status"}}).at("jobs").at("queued"), 5);
}

TEST(DaemonProtocol, SubscribeAndShutdownMessage) {
  TempDir dir;
  DaemonProcess d(dir.path());
  Client c(d.socket());
  EXPECT_EQ(c.request({{"type", "subscribe"}}).at("type"), "ok");
  EXPECT_EQ(Client::status(d.socket()).subscribers, 1u);
  EXPECT_EQ(c.request({{"type", "shutdown"}}).at("type"), "ok");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (d.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(d.running()) << d.log();
}

TEST(DaemonProtocol, SecondDaemonOnTheSameCacheIsRefused) {
  TempDir dir;
  DaemonProcess d(dir.path());
  const auto r = run_daemon_command(
      {"--cache-dir", d.cache_dir().string(), "--socket", (dir.path() / "other.sock").string(),
       "--metrics-listen", "off", "--config", (dir.path() / "kdispatchd.toml").string()});
  EXPECT_EQ(r.exit_code, 2);  // usage (common/exit_code.hpp): restarting cannot help
  EXPECT_NE(r.output.find("another kdispatchd"), std::string::npos) << r.output;
}

TEST(DaemonPeers, UidNotInAllowedUidsIsRefused) {
  TempDir dir;
  const uid_t other = ::getuid() == 4242 ? 4243 : 4242;
  DaemonProcess d(dir.path(), {"--allowed-uids", std::to_string(other)});
  Client c(d.socket());
  try {
    c.send({{"type", "status"}});
  } catch (const Error&) {
    // the refusal may close the socket before the request is written; the error frame waits
  }
  const auto reply = c.receive(std::chrono::seconds(5));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->at("type"), "error");
  EXPECT_NE(reply->at("message").get<std::string>().find("not allowed"), std::string::npos);
  EXPECT_FALSE(c.receive(std::chrono::seconds(5)).has_value());  // and closed
  const std::string metrics = http_get(d.metrics_port(), "/metrics");
  // (The start-up probe of DaemonProcess was refused too.)
  EXPECT_EQ(metrics.find("kdispatch_clients_refused_total 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kdispatch_clients_accepted_total 0"), std::string::npos) << metrics;
}

// As root, a real client of another uid (nobody) is refused by SO_PEERCRED (the socket mode is
// opened up so that connect() itself succeeds).
TEST(DaemonPeers, ClientOfAnotherUidIsRefusedWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client under another uid";
  TempDir dir;
  DaemonProcess d(dir.path(), {"--socket-mode", "0666"});
  ::chmod(dir.path().c_str(), 0755);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(10);
    try {
      Client c(d.socket());
      try {
        c.send({{"type", "status"}});
      } catch (const Error&) {
        // the refusal may close the socket before the request is written; the error frame waits
      }
      const auto reply = c.receive(std::chrono::seconds(5));
      if (!reply || reply->at("type") != "error") _exit(11);
      if (reply->at("message").get<std::string>().find("uid 65534") == std::string::npos) _exit(12);
      _exit(0);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << d.log();
  EXPECT_NO_THROW(Client::status(d.socket()));  // root is still served
}

TEST(DaemonConfig, PrintConfigShowsValuesAndSources) {
  TempDir dir;
  const auto file = dir.path() / "kd.toml";
  std::ofstream(file) << "proposer = \"llm\"\nallowed_uids = [0, 1000]\n";
  const auto r = run_daemon_command(
      {"--config", file.string(), "--budget-rounds", "3", "--print-config"},
      {"KD_LOG_LEVEL=debug"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("proposer = \"llm\"  # file " + file.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allowed_uids = \"0,1000\"  # file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("budget_rounds = \"3\"  # flag --budget-rounds"), std::string::npos);
  EXPECT_NE(r.output.find("log_level = \"debug\"  # env KD_LOG_LEVEL"), std::string::npos);
  EXPECT_NE(r.output.find("socket_mode = \"0600\"  # default"), std::string::npos);

  std::ofstream(file) << "no_such_key = 1\n";
  const auto bad = run_daemon_command({"--config", file.string(), "--print-config"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown key 'no_such_key'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace kd::test
