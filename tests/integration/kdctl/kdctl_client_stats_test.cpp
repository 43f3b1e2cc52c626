// The client counters end to end: a real libkdispatch client process (a forked child calling the C
// API against the real daemon's socket) counts its calls, its background thread reports them, and
// `kdctl stats` shows them: per live process while it runs, in the totals after it exits (its final
// report sent from the exit path). On a machine without a GPU every call falls back with no_gpu;
// with one, the lookups in device 0's primary context miss the empty cache. Row operators' calls
// (issue 33) are counted alike.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "cuda/driver.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "kdispatch/kdispatch.h"
#include "support/gemm_desc.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kCalls = 25;

// What the child calls: GEMM lookups, or (issue 33) a row operator's.
enum class Calls { gemm, layernorm };

// The child: kd_init on the daemon's socket, kCalls lookups, its own kd_stats written to
// `report_fd`, then it waits for a byte on `go_fd` and exits through exit() (atexit handlers run:
// libkdispatch's stop path sends the final report).
[[noreturn]] void client_process(const DaemonProcess& d, int report_fd, int go_fd, Calls calls = Calls::gemm) {
  const std::string cache = d.cache_dir().string(), socket = d.socket().string();
  (void)gpu_unavailable_reason();  // with a GPU: device 0's primary context becomes current
  kd_options o{cache.c_str(), socket.c_str(), 0, 200};
  if (kd_init(&o) != KD_SUCCESS) _exit(10);
  const kd_gemm_desc desc = test::gemm_desc(KD_OP_N, KD_OP_N, 64, 64, 64, KD_DTYPE_F32);
  const kd_row_desc row{KD_ROW_LAYERNORM, KD_DTYPE_F32, 4096, 1024, 1, 1};
  for (int i = 0; i < kCalls; ++i) {
    const kd_entry* entry = nullptr;
    kd_fallback_reason reason{};
    if (calls == Calls::gemm) {
      if (kd_gemm_lookup(&desc, nullptr, &entry, &reason) == KD_SUCCESS) kd_gemm_release(entry);
    } else if (kd_row_lookup(&row, nullptr, &entry, &reason) == KD_SUCCESS) {
      kd_gemm_release(entry);
    }
  }
  kd_stats_t st{};
  kd_stats(&st);
  std::uint64_t fallbacks = 0;
  for (const std::uint64_t n : st.fallbacks) fallbacks += n;
  const std::string mine = json{{"hits", st.hits}, {"misses", st.misses}, {"fallbacks", fallbacks},
                                {"no_gpu", st.fallbacks[KD_FALLBACK_NO_GPU]}}.dump();
  if (::write(report_fd, mine.data(), mine.size()) != static_cast<ssize_t>(mine.size())) _exit(11);
  ::close(report_fd);
  char go = 0;
  while (::read(go_fd, &go, 1) < 0 && errno == EINTR) {
  }
  std::exit(0);
}

std::optional<json> read_report(int fd) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (text.empty()) return std::nullopt;
  return json::parse(text);
}

class KdctlClientStats : public ::testing::Test {
protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(tmp_.path(), std::vector<std::string>{}, "workers = \"none\"\n");
  }
  json stats_json() {
    const KdctlRun r = run_kdctl(tmp_.path(), {"stats", "--json", "--cache-dir", daemon_->cache_dir().string(),
                                               "--socket", daemon_->socket().string()});
    EXPECT_EQ(r.rc, 0) << r.err;
    return json::parse(r.out);
  }
  // Polls kdctl stats --json until `pred(clients)` holds (5 s at most: reports go out at once on
  // connecting, then every 2 s while counters change).
  // A forked client process (client_process): `report` reads what it reports, closing `go` lets it
  // exit; finish_client() does that and returns its wait status.
  struct Client {
    pid_t pid = -1;
    int report = -1, go = -1;
  };
  void start_client(Calls calls, Client& c) {
    int report[2], go[2];
    ASSERT_EQ(::pipe(report), 0);
    ASSERT_EQ(::pipe(go), 0);
    c.pid = ::fork();
    ASSERT_GE(c.pid, 0);
    if (c.pid == 0) {
      ::close(report[0]);
      ::close(go[1]);
      client_process(*daemon_, report[1], go[0], calls);
    }
    ::close(report[1]);
    ::close(go[0]);
    c.report = report[0];
    c.go = go[1];
  }
  static int finish_client(const Client& c) {
    ::close(c.go);
    int status = 0;
    ::waitpid(c.pid, &status, 0);
    return status;
  }
  template <class Pred>
  json clients_when(Pred pred) {
    json clients;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    do {
      clients = stats_json().at("clients");
      if (pred(clients)) break;
      std::this_thread::sleep_for(50ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return clients;
  }

  TempDir tmp_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(KdctlClientStats, AClientProcessCountersShowUpLiveThenInTheTotals) {
  Client client;
  ASSERT_NO_FATAL_FAILURE(start_client(Calls::gemm, client));
  const pid_t child = client.pid;
  const auto finish_child = [&] { return finish_client(client); };
  const auto mine = read_report(client.report);
  ::close(client.report);
  if (!mine) {
    finish_child();
    FAIL() << "the client process reported nothing; daemon log:\n" << daemon_->log();
  }
  const std::uint64_t calls = mine->at("hits").get<std::uint64_t>() + mine->at("fallbacks").get<std::uint64_t>();
  ASSERT_EQ(calls, std::uint64_t{kCalls}) << *mine;
  const bool no_gpu = cu_device_count() == 0;
  if (no_gpu) {
    EXPECT_EQ(mine->at("no_gpu"), kCalls) << *mine;
  }

  // Live: the process and its counts, by pid and program name.
  json clients = clients_when([&](const json& c) {
    return c.value("available", false) && c.at("live").size() == 1 && c.at("live")[0].at("calls") == kCalls;
  });
  ASSERT_TRUE(clients.value("available", false)) << clients;
  ASSERT_EQ(clients.at("live").size(), 1u) << clients;
  const json& p = clients.at("live")[0];
  EXPECT_EQ(p.at("pid"), child);
  EXPECT_EQ(p.at("program"), std::string(program_invocation_short_name));
  EXPECT_EQ(p.at("calls"), kCalls) << clients;
  EXPECT_EQ(p.at("hits"), mine->at("hits"));
  EXPECT_EQ(p.at("misses"), mine->at("misses"));
  if (no_gpu) {
    EXPECT_EQ(p.at("fallbacks").at("no_gpu"), kCalls) << clients;
  }

  const KdctlRun text = run_kdctl(tmp_.path(), {"stats", "--cache-dir", daemon_->cache_dir().string(), "--socket",
                                                daemon_->socket().string()});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("client counters (reported to kdispatchd by 1 process(es)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("calls " + std::to_string(kCalls) + ": hits "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(std::to_string(child) + "  " + program_invocation_short_name), std::string::npos) << text.out;
  if (no_gpu) {
    EXPECT_NE(text.out.find("no_gpu"), std::string::npos) << text.out;
  }

  // Exited: no longer live, its counts kept in the totals (sent by the exit path at the latest).
  const int status = finish_child();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client process status " << status;
  clients = clients_when([&](const json& c) { return c.at("live").empty(); });
  EXPECT_TRUE(clients.at("live").empty()) << clients;
  EXPECT_EQ(clients.at("processes_seen"), 1);
  EXPECT_EQ(clients.at("totals").at("calls"), kCalls) << clients;
  EXPECT_EQ(clients.at("totals").at("hits"), mine->at("hits"));
  EXPECT_EQ(clients.at("totals").at("misses"), mine->at("misses"));

  const KdctlRun status_text = run_kdctl(tmp_.path(), {"status", "--socket", daemon_->socket().string()});
  EXPECT_NE(status_text.out.find("client calls: " + mine->at("hits").dump() + " hits"), std::string::npos)
      << status_text.out;

  // kdctl stats --zero starts the totals over.
  const KdctlRun zero = run_kdctl(tmp_.path(), {"stats", "--zero", "--socket", daemon_->socket().string()});
  EXPECT_EQ(zero.rc, 0) << zero.err;
  EXPECT_NE(zero.out.find("client counters zeroed"), std::string::npos) << zero.out;
  EXPECT_EQ(stats_json().at("clients").at("totals").at("calls"), 0);
}

// Issue 33: a row operator's calls (kd_row_lookup) are counted and reported as GEMM calls are, and
// kdctl stats shows them in the totals.
TEST_F(KdctlClientStats, RowOperatorCallsAreCountedInTheTotals) {
  Client client;
  ASSERT_NO_FATAL_FAILURE(start_client(Calls::layernorm, client));
  const auto mine = read_report(client.report);
  ::close(client.report);
  // Live first (its connection is up and its counts reported), then let it exit.
  const json live = clients_when([&](const json& c) {
    return c.value("available", false) && c.at("live").size() == 1 && c.at("live")[0].at("calls") == kCalls;
  });
  const int status = finish_client(client);
  ASSERT_TRUE(mine.has_value()) << "the client process reported nothing; daemon log:\n" << daemon_->log();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client process status " << status;
  EXPECT_EQ(mine->at("hits").get<std::uint64_t>() + mine->at("fallbacks").get<std::uint64_t>(), std::uint64_t{kCalls})
      << *mine;
  if (cu_device_count() == 0) {
    EXPECT_EQ(mine->at("no_gpu"), kCalls) << *mine;
  }
  EXPECT_EQ(live.at("live").size(), 1u) << live;
  const json clients = clients_when([&](const json& c) {
    return c.value("available", false) && c.at("live").empty() && c.at("totals").at("calls") == kCalls;
  });
  EXPECT_EQ(clients.at("totals").at("calls"), kCalls) << clients;
  EXPECT_EQ(clients.at("totals").at("misses"), mine->at("misses")) << clients;
  const KdctlRun text = run_kdctl(tmp_.path(), {"stats", "--cache-dir", daemon_->cache_dir().string(), "--socket",
                                                daemon_->socket().string()});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("calls " + std::to_string(kCalls) + ": hits "), std::string::npos) << text.out;
}

TEST_F(KdctlClientStats, ZeroWithoutADaemonIsExitOne) {
  const auto nowhere = (tmp_.path() / "none.sock").string();
  const KdctlRun r = run_kdctl(tmp_.path(), {"stats", "--zero", "--socket", nowhere});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no kdispatchd running on " + nowhere), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kd::test
