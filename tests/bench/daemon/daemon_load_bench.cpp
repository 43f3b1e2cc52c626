// Load benchmark of the real kdispatchd: N concurrent clients (default 64), each on its own
// connection, send batched miss reports with ack (every counted miss is committed to LMDB), while
// one more client measures status request latency. Prints misses/s, the daemon's CPU time per miss
// (user + system, from /proc: steadier than misses/s on a machine shared with other work) and
// status p50/p99.
//
//   bench_daemon_load [--clients 64] [--batch 32] [--seconds 5] [--keys 4096] [--no-ack]
// Run it by hand (the numbers depend on the machine); ctest checks only --help and a bad flag.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "support/temp_dir.hpp"

int main(int argc, char** argv) {
  int clients = 64, batch = 32, seconds = 5, keys = 4096;
  bool no_ack = false;
  CLI::App app{"bench_daemon_load: concurrent clients send batched miss reports to a real kdispatchd\n"
               "(started on a temporary cache) while one more client times status requests;\n"
               "prints misses/s and the status latency's p50/p99."};
  app.add_option("--clients", clients, "Concurrent client connections")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batch, "Keys per miss message")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seconds", seconds, "Measured seconds (after 0.5 s of warm-up)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--keys", keys, "Distinct keys cycled through")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--no-ack", no_ack, "Send misses fire-and-forget instead of waiting for the commit");
  app.footer("Exit codes: 0 every request answered, 1 a client saw an error, 2 usage.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const bool ack = !no_ack;
  using nlohmann::json;
  using Clock = std::chrono::steady_clock;
  kd::test::TempDir dir;
  kd::test::DaemonProcess daemon(dir.path(), {}, "log_level = \"warn\"\n");

  std::vector<std::string> key_lines;
  for (int k = 1; k <= keys; ++k) key_lines.push_back(kd::test::test_key(k));

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> misses{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      try {
        kd::daemon::Client c(daemon.socket());
        std::uint64_t next_key = static_cast<std::uint64_t>(t) * 7919;
        while (!stop) {
          json list = json::array();
          for (int b = 0; b < batch; ++b)
            list.push_back({{"key", key_lines[next_key++ % key_lines.size()]}, {"count", 1}});
          json message{{"type", "miss"}, {"keys", std::move(list)}};
          if (ack) {
            message["ack"] = true;
            const json r = c.request(std::move(message));
            if (r.at("type") != "ok") ++errors;
          } else {
            c.send(std::move(message));
          }
          misses += static_cast<std::uint64_t>(batch);
        }
      } catch (const std::exception& e) {
        ++errors;
        std::fprintf(stderr, "client %d: %s\n", t, e.what());
      }
    });
  }
  std::vector<double> status_ms;
  std::thread status_thread([&] {
    kd::daemon::Client c(daemon.socket());
    while (!stop) {
      const auto t0 = Clock::now();
      c.request({{"type", "status"}});
      status_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // warm-up
  const std::uint64_t m0 = misses;
  const double cpu0 = kd::test::cpu_seconds(daemon.pid());
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const std::uint64_t m1 = misses;
  const double cpu1 = kd::test::cpu_seconds(daemon.pid());
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  status_thread.join();

  // Every acknowledged miss is in the queue.
  const kd::protocol::Status st = kd::daemon::Client::status(daemon.socket());
  std::sort(status_ms.begin(), status_ms.end());
  const auto pct = [&](double p) {
    return status_ms.empty() ? 0.0 : status_ms[static_cast<std::size_t>(p * (status_ms.size() - 1))];
  };
  std::printf("clients=%d batch=%d keys=%d ack=%s seconds=%.1f\n", clients, batch, keys,
              ack ? "yes" : "no", elapsed);
  std::printf("misses/s: %.0f\n", static_cast<double>(m1 - m0) / elapsed);
  std::printf("daemon CPU: %.2f us per miss (%.0f%% of a core)\n",
              m1 > m0 ? (cpu1 - cpu0) * 1e6 / static_cast<double>(m1 - m0) : 0.0, 100.0 * (cpu1 - cpu0) / elapsed);
  std::printf("status requests: %zu, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", status_ms.size(),
              pct(0.50), pct(0.99), status_ms.empty() ? 0.0 : status_ms.back());
  std::printf("jobs queued: %llu, LMDB transactions: %llu, client errors: %llu\n",
              static_cast<unsigned long long>(st.jobs.queued),
              static_cast<unsigned long long>(st.transactions_committed),
              static_cast<unsigned long long>(errors.load()));
  return errors == 0 ? 0 : 1;
}
