// 100,000 fuzzed frames against the real kdispatchd (issue 28), over 8 parallel streams:
//   - benign frames, pipelined on long-lived connections: every message type with random values,
//     keys valid and not (up to 600 KB), batches of every size up to the frame limit, acknowledged
//     misses whose reply would once have been oversized. Each is answered (or not) as PROTOCOL.md
//     says and never closes its connection or draws an error;
//   - hostile frames, one per fresh connection: random bytes, random streams, truncated frames,
//     oversized announced lengths, valid JSON of a wrong type in every field of every message,
//     deep nesting. Each closes that connection only;
//   - then 300 connections reporting the largest client counters the protocol allows, and stats.
// Throughout, the daemon never exits; a bystander connection is served at the end; the daemon's
// RSS after the run stays within a generous bound of its RSS after a warm-up.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ctl_client/ctl_client.hpp"
#include "common/error.hpp"
#include "daemon_process.hpp"
#include "key/gemm_key.hpp"
#include "protocol/frame.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

using daemon::Client;
using nlohmann::json;

// KD_FUZZ_FRAMES overrides the count (longer runs by hand; the test asserts at least 100,000).
int frames_to_send() {
  const char* n = std::getenv("KD_FUZZ_FRAMES");
  return n != nullptr && *n != '\0' ? std::atoi(n) : 100000;
}
constexpr int kStreams = 8;
constexpr int kKeyPool = 300;  // distinct valid keys: the job table stays small

std::size_t rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

std::string header(std::uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
}

// Invalid UTF-8 in random text is sent replaced, as any JSON encoder would.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string frame(const json& j) { return protocol::encode_frame(dump(j)); }

// `m` with its array `field` cut in half until the message fits a frame.
std::string fitting_frame(json m, const char* field) {
  std::string payload = dump(m);
  while (!protocol::fits_in_frame(payload.size())) {
    auto& a = m[field];
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
    payload = dump(m);
  }
  return protocol::encode_frame(payload);
}

class Fuzzer {
public:
  explicit Fuzzer(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::string bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(below(256));
    return s;
  }
  // Sizes spread over orders of magnitude: 1..max, log-uniform.
  std::size_t size_up_to(std::size_t max) {
    const double e = std::uniform_real_distribution<double>(0, std::log(static_cast<double>(max)))(rng_);
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::exp(e)));
  }

  std::string pool_key() { return test_key(1 + static_cast<int>(below(kKeyPool))); }
  // A key line: valid from the pool, its shape line, or junk of many kinds and lengths.
  std::string any_key() {
    switch (below(8)) {
      case 0: case 1: case 2: return pool_key();
      case 3: {
        const auto k = std::get<GemmKey>(parse_key(pool_key()));
        return k.shape_line();
      }
      case 4: {  // a valid key with one byte damaged (a control byte: no new valid key, no new job)
        std::string k = pool_key();
        k[below(k.size())] = static_cast<char>(1 + below(31));
        return k;
      }
      case 5: return std::string(size_up_to(4 * kMaxKeyLineBytes), 'k');  // long, around the limit
      case 6: return bytes(size_up_to(300));
      default: return "gemm a=bf16 m=" + std::to_string(below(100000));
    }
  }

  // A frame the daemon must handle without closing the connection; `replies` says how many
  // replies it sends (published notices aside).
  struct Benign {
    std::string bytes;
    int replies = 0;
  };
  Benign benign(const std::string& instance, std::uint64_t& stats_counter) {
    const bool ack = chance(0.3);
    switch (below(16)) {
      case 0: case 1: case 2: {
        json m{{"v", 1}, {"type", "miss"}, {"key", any_key()}, {"count", below(1000)}};
        if (chance(0.2)) m["hits"] = below(1u << 30);
        if (ack) m["ack"] = true;
        if (chance(0.1)) m["unknown_field"] = json::array({1, "x", json::object()});
        return {frame(m), ack ? 1 : 0};
      }
      case 3: case 4: {  // a batch of any size that fits a frame
        const std::size_t n = size_up_to(chance(0.003) ? 5000 : 40);
        json keys = json::array();
        for (std::size_t i = 0; i < n; ++i) {
          json e{{"key", any_key()}};
          if (chance(0.5)) e["count"] = below(5);
          keys.push_back(std::move(e));
        }
        return {fitting_frame({{"v", 1}, {"type", "miss"}, {"keys", keys}, {"ack", ack}}, "keys"), ack ? 1 : 0};
      }
      case 5: {
        json keys = json::array();
        for (std::size_t i = 0, n = size_up_to(chance(0.01) ? 1000 : 20); i < n; ++i) keys.push_back(any_key());
        json m{{"v", 1}, {"type", "prewarm"}, {"keys", keys}};
        if (chance(0.3)) m["proposer"] = chance(0.5) ? "builtin" : "builtin,cublaslt";
        if (chance(0.3)) m["budgets"] = {{"rounds", below(10)}, {"candidates", below(100)}};
        return {fitting_frame(m, "keys"), 1};
      }
      case 6: {
        // Top jobs copy the whole job table (status's cost, not the protocol's): now and then.
        const std::uint64_t top = chance(0.95) ? 0 : chance(0.5) ? below(2000) : (1ull << 40);
        return {frame({{"v", 1}, {"type", "status"}, {"jobs", top}}), 1};
      }
      case 7: return {frame({{"v", 1}, {"type", "stats"}}), 1};
      case 8: return {frame({{"v", 1}, {"type", "hello"}, {"pid", below(1u << 22)}, {"client", bytes(below(40)) }}), 1};
      case 9: return {frame({{"v", 1}, {"type", "subscribe"}}), 1};
      case 10: {
        json keys = json::array();
        for (std::size_t i = 0, n = size_up_to(chance(0.02) ? 500 : 20); i < n; ++i) keys.push_back(any_key());
        return {fitting_frame({{"v", 1}, {"type", "jobs"}, {"keys", keys}}, "keys"), 1};
      }
      case 11: return {frame({{"v", 1}, {"type", "cancel"}, {"key", any_key()}}), 1};
      case 12: {
        stats_counter += below(100);
        json fallbacks = json::object();
        for (std::size_t i = 0, n = below(8); i < n; ++i) fallbacks["reason_" + std::to_string(i)] = stats_counter;
        return {frame({{"v", 1}, {"type", "client_stats"}, {"pid", 1 + below(1u << 20)}, {"program", "fuzz"},
                       {"instance", instance}, {"hits", stats_counter}, {"misses", stats_counter},
                       {"fallbacks", fallbacks}}),
                0};
      }
      case 13: {  // the records an application hit (no reply)
        json keys = json::array();
        for (std::size_t i = 0, n = size_up_to(chance(0.01) ? 2048 : 40); i < n; ++i) keys.push_back(any_key());
        return {fitting_frame({{"v", 1}, {"type", "usage"}, {"keys", keys}}, "keys"), 0};
      }
      case 14: {  // finished jobs by state and age, or only counted
        static const char* const kFinished[] = {"done", "failed", "cancelled"};
        json m{{"v", 1}, {"type", "purge"}};
        if (chance(0.7)) {
          json states = json::array();
          for (const char* s : kFinished)
            if (chance(0.5)) states.push_back(s);
          if (!states.empty()) m["states"] = states;
        }
        if (chance(0.7)) m["older_than_s"] = chance(0.9) ? below(3600) : (1ull << 50);
        if (chance(0.5)) m["dry_run"] = chance(0.5);
        return {frame(m), 1};
      }
      default: {
        // zero_stats stores every instance the daemon remembers: costly, so rarer.
        if (chance(0.05)) return {frame({{"v", 1}, {"type", "zero_stats"}}), 1};
        if (chance(0.6)) return {frame({{"v", 1}, {"type", "stats"}}), 1};
        json keys = json::array({pool_key()});  // few keys: notices go to every subscriber
        return {frame({{"v", 1}, {"type", "cache_changed"}, {"keys", keys}}), 1};
      }
    }
  }

  // Rare benign frames that are large: the shapes of issue 28's reports.
  Benign large() {
    switch (below(4)) {
      case 0: return {frame({{"v", 1}, {"type", "miss"}, {"key", std::string(530000, 'k')}, {"ack", true}}), 1};
      case 1: {
        json keys = json::array();
        for (int i = 0; i < 16; ++i) keys.push_back({{"key", "gemm " + std::string(40000, 'a')}});
        return {frame({{"v", 1}, {"type", "miss"}, {"keys", keys}, {"ack", true}}), 1};
      }
      case 2: return {frame({{"v", 1}, {"type", "prewarm"}, {"keys", {std::string(600000, 'p')}}}), 1};
      default: {  // a payload of exactly the limit
        json m{{"v", 1}, {"type", "stats"}, {"pad", ""}};
        const std::size_t base = m.dump().size();
        m["pad"] = std::string(protocol::kMaxFramePayloadBytes - base, ' ');
        return {frame(m), 1};
      }
    }
  }

  // A frame after which the daemon closes the connection. `hang_up` asks the sender to close at
  // once (a truncated frame would otherwise wait for the frame timeout).
  struct Hostile {
    std::string bytes;
    bool hang_up = false;
    bool expect_error = false;  // the daemon answers with an error frame before it closes
  };
  Hostile hostile() {
    switch (below(9)) {
      case 0: return {protocol::encode_frame(bytes(1 + below(400))), false, true};
      case 1: {  // a random stream whose first length runs past what is sent
        std::string s = header(static_cast<std::uint32_t>(1000 + below(1u << 20))) + bytes(below(500));
        return {s, true, false};
      }
      case 2: return {header(static_cast<std::uint32_t>(protocol::kMaxFramePayloadBytes + 1 + below(1u << 30))), false, true};
      case 3: {
        const std::string f = frame({{"v", 1}, {"type", "status"}});
        return {f.substr(0, 1 + below(f.size() - 1)), true, false};
      }
      case 4: return {frame(wrong_type()), false, true};
      case 5: return {frame(wrong_type()), false, true};
      case 6: {  // nesting a hundred thousand deep
        const std::size_t depth = 1 + size_up_to(100000);
        return {protocol::encode_frame(std::string(depth, '[') + std::string(depth, ']')), false, true};
      }
      case 7: {
        json m{{"type", "miss"}, {"key", pool_key()}};
        switch (below(4)) {
          case 0: m["v"] = 2; break;
          case 1: break;  // no version
          case 2: m["v"] = "1"; break;
          default: m["v"] = 1; m["type"] = bytes(1 + below(64)) + "x"; break;
        }
        return {frame(m), false, true};
      }
      default: return {protocol::encode_frame(""), false, true};
    }
  }

  // A valid message of a random type with one field replaced by a value of another JSON type.
  json wrong_type() {
    static const std::vector<json> kMessages = {
        {{"type", "hello"}, {"pid", 1}, {"client", "x"}},
        {{"type", "miss"}, {"key", "k"}, {"count", 1}, {"hits", 1}, {"ack", true}},
        {{"type", "miss"}, {"keys", json::array({{{"key", "k"}, {"count", 1}}})}},
        {{"type", "client_stats"}, {"pid", 1}, {"program", "p"}, {"instance", "i"}, {"hits", 1}, {"misses", 1},
         {"fallbacks", {{"r", 1}}}, {"loads", 1}, {"swaps", 1}, {"final", false}},
        {{"type", "prewarm"}, {"keys", json::array({"k"})}, {"proposer", "builtin"}, {"budgets", {{"rounds", 1}}}},
        {{"type", "status"}, {"jobs", 1}},
        {{"type", "cancel"}, {"key", "k"}},
        {{"type", "jobs"}, {"keys", json::array({"k"})}},
        {{"type", "cache_changed"}, {"keys", json::array({"k"})}},
        {{"type", "usage"}, {"keys", json::array({"k"})}},
        {{"type", "purge"}, {"states", json::array({"done"})}, {"older_than_s", 1}, {"dry_run", true}},
    };
    static const std::vector<json> kWrong = {json(nullptr), json(-1),   json(1.5),         json("s"),
                                             json(true),    json::array({1}), json::object(), json(-7.0)};
    json m = kMessages[below(kMessages.size())];
    m["v"] = 1;
    std::vector<std::string> fields;
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it.key() != "v") fields.push_back(it.key());
    const std::string name = fields[below(fields.size())];
    // The value replaced: the field, or the key inside a batch entry.
    json& target = name == "keys" && m[name].at(0).is_object() ? m[name][0]["key"] : m[name];
    json wrong = kWrong[below(kWrong.size())];
    // A value of the right type is not wrong: skip those (a string for a string field, ...).
    while (wrong.type() == target.type() || (target.is_boolean() && wrong.is_boolean()) ||
           (target.is_number_unsigned() && wrong.is_number_unsigned()))
      wrong = kWrong[below(kWrong.size())];
    target = wrong;
    return m;
  }

private:
  std::mt19937_64 rng_;
};

struct Tally {
  std::atomic<long> frames{0};
  std::atomic<long> hostile{0};
  std::atomic<long> benign_errors{0};
  std::atomic<long> benign_closes{0};
  std::atomic<long> hostile_open{0};    // a hostile frame whose connection the daemon kept open
  std::atomic<long> hostile_silent{0};  // one closed without the error frame it should have drawn
  std::mutex mu;
  std::vector<std::string> notes;
  void note(const std::string& n) {
    const std::lock_guard lock(mu);
    if (notes.size() < 10) notes.push_back(n.substr(0, 300));
  }
};

// One stream: batches of benign frames on a long-lived connection, hostile frames on fresh ones.
void run_stream(const std::filesystem::path& socket, int stream, int frames, Tally& t) {
  Fuzzer f(0x28a0000 + static_cast<std::uint64_t>(stream));
  std::unique_ptr<Client> conn;
  std::uint64_t stats_counter = 0;
  int connections = 0;
  std::string instance;
  for (int sent = 0; sent < frames;) {
    if (f.chance(0.6)) {  // hostile (about 1 frame in 10), on a connection of its own
      const auto h = f.hostile();
      ++sent;
      t.hostile++;
      Client c(socket);
      try {
        c.send_raw(h.bytes);
      } catch (const Error&) {
        continue;  // closed while we were still sending: what the daemon must do
      }
      if (h.hang_up) continue;
      bool error = false, closed = false;
      for (int i = 0; i < 4 && !closed; ++i) {
        try {
          const auto reply = c.receive(std::chrono::seconds(5));
          if (!reply) closed = true;
          else if (reply->value("type", "") == "error") error = true;
        } catch (const Error&) {
          closed = true;
        }
      }
      if (!closed) {
        t.hostile_open++;
        t.note("hostile frame left open: " + dump(json(h.bytes.substr(4, 200))));
      } else if (h.expect_error && !error) {
        t.hostile_silent++;
        t.note("hostile frame closed without an error frame: " + dump(json(h.bytes.substr(0, 60))));
      }
      continue;
    }
    if (!conn) {
      conn = std::make_unique<Client>(socket);
      instance = "fuzz" + std::to_string(stream) + "_" + std::to_string(++connections);
    }
    // A pipelined batch, then a hello (a cheap request): read every reply up to its hello_ok.
    std::string batch;
    int expected = 1;
    const int n = 1 + static_cast<int>(f.below(32));
    for (int i = 0; i < n && sent < frames; ++i, ++sent) {
      const auto b = f.chance(0.0005) ? f.large() : f.benign(instance, stats_counter);
      batch += b.bytes;
      expected += b.replies;
    }
    batch += frame({{"v", 1}, {"type", "hello"}, {"pid", 1}, {"client", "fuzz"}});
    ++sent;
    try {
      conn->send_raw(batch);
      for (int got = 0; got < expected;) {
        const auto reply = conn->receive(std::chrono::seconds(30));
        if (!reply) throw Error(ErrorDomain::system, 0, "closed");
        const std::string type = reply->value("type", "");
        if (type == "published") continue;
        if (type == "error") {
          t.benign_errors++;
          t.note("benign frame drew " + reply->dump().substr(0, 300));
        }
        ++got;
      }
    } catch (const Error& e) {
      t.benign_closes++;
      t.note(std::string("benign connection closed: ") + e.what());
      conn.reset();
    }
  }
  t.frames += frames;
}

TEST(DaemonFuzz, HundredThousandFramesNeverStopTheDaemonAndMemoryStaysBounded) {
  TempDir dir;
  const int kFrames = frames_to_send();
  DaemonProcess d(dir.path(), {"--workers", "none"});
  Client bystander(d.socket());
  ASSERT_EQ(bystander.request({{"type", "subscribe"}}).at("type"), "ok");
  Tally tally;

  // Warm-up: the job table, the key memo and the allocator reach their working size.
  const auto warm = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> warming;
    for (int s = 0; s < kStreams; ++s) warming.emplace_back([&, s] { run_stream(d.socket(), 100 + s, 3000 / kStreams, tally); });
    for (auto& w : warming) w.join();
  }
  std::printf("warm-up: 3000 frames in %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - warm).count());
  const std::size_t rss_before = rss_kb(d.pid());
  ASSERT_GT(rss_before, 0u);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> streams;
  for (int s = 0; s < kStreams; ++s)
    streams.emplace_back([&, s] { run_stream(d.socket(), s, (kFrames - 3000) / kStreams, tally); });
  for (auto& s : streams) s.join();
  std::printf("streams: %d frames in %.1f s\n", kFrames - 3000,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  ASSERT_TRUE(d.running()) << d.log();

  // Many live clients reporting the largest counters the protocol allows, then stats.
  json fallbacks = json::object();
  for (int r = 0; r < 64; ++r) fallbacks[std::string(60, 'f') + std::to_string(1000 + r)] = 1u << 30;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 300; ++i) {
    clients.push_back(std::make_unique<Client>(d.socket()));
    clients.back()->send({{"type", "client_stats"}, {"pid", 1 + i}, {"program", std::string(256, 'p')},
                          {"instance", "many" + std::to_string(i)}, {"hits", 1}, {"misses", 1},
                          {"fallbacks", fallbacks}});
  }
  for (auto& c : clients) ASSERT_EQ(c->request({{"type", "status"}}).at("type"), "status");
  for (int i = 0; i < 20; ++i) {
    const json s = clients[static_cast<std::size_t>(i)]->request({{"type", "stats"}});
    ASSERT_EQ(s.at("type"), "stats") << s.dump().substr(0, 300);
    EXPECT_EQ(s.at("clients").at("processes_live").get<int>() >= 300, true);
  }
  clients.clear();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ASSERT_TRUE(d.running()) << d.log();
  json status;
  for (;;) {  // the bystander may hold published notices from cache_changed frames
    status = bystander.request({{"type", "status"}});
    if (status.at("type") == "status") break;
  }
  const std::size_t rss_after = rss_kb(d.pid());
  std::printf("%ld frames (%ld hostile) in %.1f s (CPU: daemon %.1f s, this test %.1f s); RSS %zu -> %zu kB; %zu jobs\n",
              tally.frames.load(), tally.hostile.load(), seconds, cpu_seconds(d.pid()), cpu_seconds(::getpid()),
              rss_before, rss_after,
              static_cast<std::size_t>(status.at("jobs").at("queued").get<long>() + status.at("jobs").at("cancelled").get<long>()));
  for (const auto& n : tally.notes) std::printf("  note: %s\n", n.c_str());
  EXPECT_GE(tally.frames.load(), std::min(kFrames, 100000));
  EXPECT_EQ(tally.benign_errors.load(), 0);
  EXPECT_EQ(tally.benign_closes.load(), 0);
  EXPECT_EQ(tally.hostile_open.load(), 0);
  EXPECT_EQ(tally.hostile_silent.load(), 0);
  // Generous: the frame buffers of 1,024 connections at their limit would be a gigabyte; what must
  // not happen is growth with the number of frames.
  EXPECT_LT(rss_after, rss_before * 2 + 128 * 1024) << "RSS " << rss_before << " -> " << rss_after << " kB";
  const protocol::Stats stats = Client::stats(d.socket());
  EXPECT_GT(static_cast<long>(stats.counters.at("protocol_errors")), tally.hostile.load() / 2);
}

}  // namespace
}  // namespace kd::test
