// The real kdispatchd against hostile input, kill -9 and a Prometheus-format check.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "protocol/frame.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using daemon::Client;
using nlohmann::json;

std::string frame_of(const std::string& payload) { return protocol::encode_frame(payload); }

std::string header(std::uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

// One hostile input per call, chosen and shaped by the generator.
std::string hostile_input(std::mt19937& rng, int kind) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> len(1, 300);
  const auto random_bytes = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(byte(rng)));
    return s;
  };
  switch (kind) {
    case 0: return frame_of(random_bytes(len(rng)));                          // garbage payload
    case 1: return random_bytes(len(rng));                                    // garbage stream
    case 2: return header(static_cast<std::uint32_t>((1u << 20) + 1 + len(rng)));  // oversized
    case 3: return header(0xffffffffu) + random_bytes(16);                    // huge length
    case 4: return frame_of(R"({"v":2,"type":"status"})");                  // wrong version
    case 5: return frame_of(R"({"type":"status"})");                         // no version
    case 6: return frame_of(R"([1,2,3])");                                   // not an object
    case 7: return frame_of(R"({"v":1,"type":"launch_missiles"})");          // unknown type
    case 8: return frame_of(R"({"v":1,"type":"miss","key":42})");            // mistyped field
    case 9: return frame_of(R"({"v":1,"type":"miss","keys":[1,2]})");        // mistyped entries
    case 10: return frame_of(R"({"v":1,"type":"hello"})");                   // missing fields
    case 11: {  // valid frame truncated at a random point (then the client hangs up)
      const std::string f = frame_of(R"({"v":1,"type":"status"})");
      return f.substr(0, std::uniform_int_distribution<std::size_t>(1, f.size() - 1)(rng));
    }
    case 12: return frame_of("");                                            // empty payload
    default: {  // a valid frame with random bytes flipped
      std::string f = frame_of(R"({"v":1,"type":"miss","key":"gemm a=bf16","count":1})");
      for (int i = 0; i < 3; ++i)
        f[std::uniform_int_distribution<std::size_t>(4, f.size() - 1)(rng)] =
            static_cast<char>(byte(rng));
      return f;
    }
  }
}

TEST(DaemonRobustness, BoundedFrameFuzzLeavesTheDaemonServing) {
  TempDir dir;
  DaemonProcess d(dir.path(), {"--frame-timeout-ms", "300"});
  Client bystander(d.socket());  // connected throughout; must be served afterwards
  std::mt19937 rng(20261122);
  constexpr int kInputs = 280;
  int error_frames = 0;
  for (int i = 0; i < kInputs; ++i) {
    const int kind = i % 14;
    Client c(d.socket());
    try {
      c.send_raw(hostile_input(rng, kind));
    } catch (const Error&) {
      continue;  // the daemon already closed on an earlier part
    }
    if (kind == 11) continue;  // truncated: hang up mid-frame
    // Every input ends with an error frame and a close, except corrupted ones that happen to
    // stay valid, or a frame whose announced length is still unsent (closed by the frame timeout).
    bool closed = false;
    for (int n = 0; n < 4 && !closed; ++n) {
      std::optional<json> reply;
      try {
        reply = c.receive(std::chrono::seconds(3));
      } catch (const Error&) {
        closed = true;
        break;
      }
      if (!reply) closed = true;
      else if (reply->value("type", "") == "error") ++error_frames;
    }
    ASSERT_TRUE(d.running()) << "daemon died on input " << i << "\n" << d.log();
  }
  EXPECT_GT(error_frames, kInputs / 2);
  const json s = bystander.request({{"type", "status"}});
  EXPECT_EQ(s.at("type"), "status");
  const protocol::Stats stats = Client::stats(d.socket());
  EXPECT_GT(stats.counters.at("protocol_errors"), std::uint64_t{kInputs / 2});
}

TEST(DaemonRobustness, SlowClientIsDroppedOthersServed) {
  TempDir dir;
  DaemonProcess d(dir.path(), {"--frame-timeout-ms", "300"});
  Client slow(d.socket());
  const std::string f = frame_of(R"({"v":1,"type":"status"})");
  slow.send_raw(f.substr(0, 7));
  Client other(d.socket());
  EXPECT_EQ(other.request({{"type", "status"}}).at("type"), "status");
  const auto reply = slow.receive(std::chrono::seconds(5));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->at("type"), "error");
  EXPECT_NE(reply->at("message").get<std::string>().find("incomplete"), std::string::npos);
  EXPECT_FALSE(slow.receive(std::chrono::seconds(5)).has_value());
  EXPECT_EQ(other.request({{"type", "status"}}).at("type"), "status");
}

// Acknowledged misses survive kill -9 at random moments during heavy queue writes, and the queue
// reopens intact each time.
TEST(DaemonRobustness, KillNineDuringQueueWritesLosesNothingAcknowledged) {
  TempDir dir;
  constexpr int kRounds = 4, kWriters = 8, kKeys = 300;
  std::map<int, std::uint64_t> acked;  // key index -> acknowledged count, over all rounds
  std::uint64_t sent_total = 0;
  std::mt19937 rng(7);
  for (int round = 0; round < kRounds; ++round) {
    auto d = std::make_unique<DaemonProcess>(dir.path());
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        std::mt19937 local(static_cast<unsigned>(round * 100 + w));
        try {
          Client c(d->socket());
          while (!stop) {
            json keys = json::array();
            std::map<int, std::uint64_t> batch;
            for (int b = 0; b < 20; ++b) {
              const int k = 1 + static_cast<int>(local() % kKeys);
              keys.push_back({{"key", test_key(k)}, {"count", 1}});
              ++batch[k];
            }
            {
              const std::lock_guard lock(mu);
              sent_total += 20;
            }
            const json r = c.request({{"type", "miss"}, {"keys", keys}, {"ack", true}},
                                     std::chrono::seconds(5));
            if (r.at("type") != "ok") break;
            const std::lock_guard lock(mu);
            for (const auto& [k, n] : batch) acked[k] += n;
          }
        } catch (const std::exception&) {
          // the daemon was killed
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    ::kill(d->pid(), SIGKILL);
    stop = true;
    for (auto& t : writers) t.join();
    d.reset();  // reaps
  }
  ASSERT_FALSE(acked.empty());
  DaemonProcess d(dir.path());
  const protocol::Status s = Client::status(d.socket(), kKeys + 10);
  std::map<std::string, std::uint64_t> stored;
  for (const auto& j : s.top_jobs.value()) stored[j.key] = j.count.value();
  std::uint64_t stored_total = 0;
  for (const auto& [k, n] : stored) stored_total += n;
  for (const auto& [k, n] : acked) EXPECT_GE(stored[test_key(k)], n) << "key " << k;
  EXPECT_LE(stored_total, sent_total);
  EXPECT_EQ(s.jobs.queued, stored.size());
}

// Prometheus text exposition 0.0.4, checked line by line.
TEST(DaemonMetrics, ExpositionParsesAndCounts) {
  HiddenGpus no_gpu;  // asserts the daemon's behaviour without a search backend
  TempDir dir;
  DaemonProcess d(dir.path());
  {
    Client c(d.socket());
    c.request({{"type", "miss"}, {"keys", {{{"key", test_key(4)}, {"count", 5}}, {{"key", "bad"}}}},
               {"hits", 7}, {"ack", true}});
  }
  const std::string text = http_get(d.metrics_port(), "/metrics");
  const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
  const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? ([-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|[-+]Inf)))");
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::map<std::string, double> values;
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      EXPECT_TRUE(helped.insert(m[1]).second) << "duplicate HELP: " << line;
    } else if (std::regex_match(line, m, type)) {
      EXPECT_TRUE(types.emplace(m[1], m[2]).second) << "duplicate TYPE: " << line;
    } else if (std::regex_match(line, m, sample)) {
      const std::string name = m[1];
      ASSERT_TRUE(types.count(name)) << "sample before its TYPE: " << line;
      if (types[name] == "counter") {
        EXPECT_TRUE(name.ends_with("_total")) << line;
      }
      values[name + std::string(m[2])] = std::stod(m[3]);
      ++samples;
    } else {
      ADD_FAILURE() << "not exposition format: '" << line << "'";
    }
  }
  EXPECT_TRUE(text.ends_with("\n"));
  EXPECT_GT(samples, 15);
  EXPECT_EQ(values["kdispatch_misses_reported_total"], 6);  // 5 + the bad key's default 1
  EXPECT_EQ(values["kdispatch_miss_keys_rejected_total"], 1);
  EXPECT_EQ(values["kdispatch_client_hits_total"], 7);
  EXPECT_EQ(values["kdispatch_queue_depth"], 1);
  EXPECT_EQ(values["kdispatch_jobs{state=\"queued\"}"], 1);
  EXPECT_EQ(values["kdispatch_search_backend_available"], 0);
  for (const char* name : {"kdispatch_winners_published_total", "kdispatch_worker_restarts_total",
                           "kdispatch_candidates_evaluated_total"})
    EXPECT_TRUE(values.count(name)) << name;

  const json status = json::parse(http_get(d.metrics_port(), "/status"));
  EXPECT_EQ(status.at("queue_depth"), 1);
  EXPECT_FALSE(status.at("search_backend").at("available").get<bool>());
}

}  // namespace
}  // namespace kd::test
