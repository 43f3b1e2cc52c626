// The Unix-socket server (server/server.hpp) in-process: binding the socket file (its mode, another
// daemon on it, a stale or foreign file, a path too long), admission (the client limit, a uid not
// allowed), notices to subscribers and the publish observer, and the hooks the rest of the daemon
// gives it. Clients are real sockets that write frames as daemon/PROTOCOL.md defines them (a
// 4-byte big-endian length, then JSON), so the test holds whatever codec the server uses.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "config/config.hpp"
#include "server/server.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using test::eventually;
using namespace std::chrono_literals;

const std::string kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
    "ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

Config config_for(const std::filesystem::path& dir, std::map<std::string, std::string> vars = {}) {
  vars.emplace("KD_CONFIG", "/dev/null");
  vars.emplace("KD_CACHE_DIR", (dir / "cache").string());
  vars.emplace("KD_SOCKET", (dir / "kd.sock").string());
  return load_config(CommandLine{}, [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

// A client speaking the wire format with blocking reads (bounded by a receive timeout).
class WireClient {
public:
  explicit WireClient(const std::filesystem::path& socket) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socket.string().copy(addr.sun_path, sizeof addr.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("connect " + socket.string());
    const timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~WireClient() { ::close(fd_); }
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;

  void send(json message) {
    message["v"] = 1;
    const std::string payload = message.dump();
    const auto n = static_cast<std::uint32_t>(payload.size());
    std::string frame{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                      static_cast<char>(n)};
    frame += payload;
    ASSERT_EQ(::write(fd_, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }
  // The next frame's JSON; nullopt when the daemon closed the connection (or nothing came in 10 s).
  std::optional<json> receive() {
    unsigned char header[4];
    if (!read_exactly(reinterpret_cast<char*>(header), 4)) return std::nullopt;
    const std::size_t n = (std::size_t{header[0]} << 24) | (header[1] << 16) | (header[2] << 8) | header[3];
    std::string payload(n, '\0');
    if (!read_exactly(payload.data(), n)) return std::nullopt;
    return json::parse(payload);
  }
  json request(json message) {
    send(std::move(message));
    auto reply = receive();
    EXPECT_TRUE(reply.has_value()) << "no reply";
    return reply.value_or(json::object());
  }

private:
  bool read_exactly(char* out, std::size_t n) {
    for (std::size_t got = 0; got < n;) {
      const ssize_t r = ::read(fd_, out + got, n - got);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  }
  int fd_;
};

// What the server asked of the rest of the daemon.
struct HookLog {
  std::atomic<int> shutdowns{0};
  std::atomic<int> work_added{0};
  std::mutex mu;
  std::vector<std::string> cancelled;
  std::vector<std::string> observed;  // the publish observer's keys
};

// The server on its own io_context thread, over a real job queue in a temporary cache.
class LiveServer {
public:
  explicit LiveServer(const Config& config) : config_(config), queue_(config.cache_dir), stats_(0) {}
  // The io thread stops first; the server then stops on this thread as it is destroyed.
  ~LiveServer() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  Server& build(HookLog& log) {
    ServerHooks hooks;
    hooks.shutdown = [&log] { ++log.shutdowns; };
    hooks.work_added = [&log] { ++log.work_added; };
    hooks.cancelled = [&log](const std::string& key) {
      const std::lock_guard lock(log.mu);
      log.cancelled.push_back(key);
    };
    hooks.status = [](std::size_t) {
      protocol::Status st;
      st.daemon = "test";
      return st;
    };
    hooks.stats = [] { return json{{"counters", json::object()}}; };
    hooks.progress = [](const std::string&) { return std::string(); };
    server_.emplace(io_, config_, queue_, metrics_, stats_, std::move(hooks));
    server_->set_publish_observer([&log](const std::string& key) {
      const std::lock_guard lock(log.mu);
      log.observed.push_back(key);
    });
    return *server_;
  }
  void run() { thread_ = std::thread([this] { io_.run(); }); }
  // Runs `f` on the io thread and waits for it (the server lives there).
  template <class F>
  auto on_io(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  Metrics& metrics() noexcept { return metrics_; }
  JobQueue& queue() noexcept { return queue_; }

private:
  Config config_;
  JobQueue queue_;
  Metrics metrics_;
  ClientStatsBook stats_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::optional<Server> server_;  // destroyed before io_
  std::thread thread_;
};

std::string start_error(Server& server) {
  try {
    server.start();
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::usage) << e.what();
    return e.what();
  }
  return "started";
}

using Vars = std::map<std::string, std::string>;  // KD_* settings

// A server started on a temporary socket and cache, serving on its own io thread.
struct Started {
  explicit Started(Vars vars = {})
      : config(config_for(dir.path(), std::move(vars))), live(config), server(live.build(log)) {
    server.start();
    live.run();
  }
  json hello() { return WireClient(config.socket).request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}); }

  test::TempDir dir;
  Config config;
  LiveServer live;
  HookLog log;
  Server& server;
};

TEST(Server, BindsTheSocketWithItsModeAndRemovesItOnStop) {
  test::TempDir dir;
  const Config config = config_for(dir.path(), {{"KD_SOCKET_MODE", "0640"}});
  LiveServer live(config);
  HookLog log;
  Server& server = live.build(log);
  server.start();
  struct stat st{};
  ASSERT_EQ(::stat(config.socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  server.stop();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(config.socket)));
}

TEST(Server, RefusesASocketAnotherDaemonAnswersOn) {
  Started first;
  test::TempDir other_cache;
  Config second_config = first.config;
  second_config.cache_dir = other_cache.path();
  LiveServer second(second_config);
  HookLog second_log;
  const std::string error = start_error(second.build(second_log));
  EXPECT_NE(error.find("another daemon is answering on " + first.config.socket.string()), std::string::npos)
      << error;
  EXPECT_NE(error.find("stop it first"), std::string::npos) << error;
  EXPECT_EQ(first.hello().at("type"), "hello_ok") << "the first daemon keeps its socket";
}

TEST(Server, ReplacesTheStaleSocketOfADaemonThatDied) {
  test::TempDir dir;
  const Config config = config_for(dir.path());
  {  // a socket file nobody listens on any more
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    config.socket.string().copy(addr.sun_path, sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  LiveServer live(config);
  HookLog log;
  live.build(log).start();
  live.run();
  EXPECT_TRUE(std::filesystem::is_socket(config.socket));
  EXPECT_EQ(WireClient(config.socket).request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}).at("type"),
            "hello_ok");
}

TEST(Server, LeavesAFileThatIsNotASocketAlone) {
  test::TempDir dir;
  const Config config = config_for(dir.path());
  std::ofstream(config.socket) << "someone's notes";
  LiveServer live(config);
  HookLog log;
  const std::string error = start_error(live.build(log));
  EXPECT_NE(error.find(config.socket.string() + " exists and is not a socket; refusing to replace it"),
            std::string::npos)
      << error;
  std::ifstream in(config.socket);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "someone's notes");
}

TEST(Server, ASocketPathLongerThanUnixAllowsIsAUsageError) {
  test::TempDir dir;
  Config config = config_for(dir.path());
  config.socket = dir.path() / (std::string(120, 's') + ".sock");
  LiveServer live(config);
  HookLog log;
  const std::string error = start_error(live.build(log));
  EXPECT_NE(error.find("longer than the 107 bytes a Unix socket allows"), std::string::npos) << error;
}

TEST(Server, RefusesClientsBeyondMaxClientsAndCountsThem) {
  Started s(Vars{{"KD_MAX_CLIENTS", "1"}});
  WireClient first(s.config.socket);
  EXPECT_EQ(first.request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}).at("type"), "hello_ok");
  WireClient second(s.config.socket);
  const auto refused = second.receive();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->at("type"), "error");
  EXPECT_EQ(refused->at("message"), "too many clients (max_clients = 1)");
  EXPECT_FALSE(second.receive().has_value()) << "the refused client is disconnected";
  EXPECT_EQ(s.live.metrics().get(Counter::clients_accepted), 1u);
  EXPECT_EQ(s.live.metrics().get(Counter::clients_refused), 1u);
  EXPECT_TRUE(eventually([&] { return s.live.on_io([&] { return s.server.clients(); }) == 1; }))
      << "the refused session is forgotten";
  EXPECT_EQ(first.request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}).at("type"), "hello_ok")
      << "the admitted client is unaffected";
}

TEST(Server, RefusesAPeerWhoseUidIsNotAllowed) {
  const uid_t other = ::geteuid() == 0 ? 4242 : 0;
  Started s(Vars{{"KD_ALLOWED_UIDS", std::to_string(other)}});
  WireClient client(s.config.socket);
  const auto refused = client.receive();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->at("type"), "error");
  const std::string message = refused->at("message");
  EXPECT_NE(message.find("peer uid " + std::to_string(::geteuid()) + " is not allowed"), std::string::npos) << message;
  EXPECT_FALSE(client.receive().has_value());
  EXPECT_EQ(s.live.metrics().get(Counter::clients_refused), 1u);
  EXPECT_EQ(s.live.metrics().get(Counter::clients_accepted), 0u);
}

TEST(Server, NoticesReachSubscribersOnlyAndTheObserverSeesKeyedOnes) {
  Started s;
  Server& server = s.server;
  WireClient subscriber(s.config.socket);
  WireClient bystander(s.config.socket);
  EXPECT_EQ(subscriber.request({{"type", "subscribe"}}).at("type"), "ok");
  EXPECT_EQ(s.live.on_io([&] { return server.subscribers(); }), 1u);
  EXPECT_EQ(s.live.on_io([&] { return server.clients(); }), 2u);

  server.notify_published(kKey, 7);  // from another thread, as the scheduler does
  const auto keyed = subscriber.receive();
  ASSERT_TRUE(keyed.has_value());
  EXPECT_EQ(keyed->at("type"), "published");
  EXPECT_EQ(keyed->at("key"), kKey);
  EXPECT_EQ(keyed->at("generation"), 7);

  server.notify_published("", 8);
  server.notify_evicted(9, 3);
  const auto unnamed = subscriber.receive();
  ASSERT_TRUE(unnamed.has_value());
  EXPECT_EQ(unnamed->at("key"), "");
  EXPECT_EQ(unnamed->at("generation"), 8);
  const auto evicted = subscriber.receive();
  ASSERT_TRUE(evicted.has_value());
  EXPECT_EQ(evicted->at("type"), "published");
  EXPECT_EQ(evicted->at("key"), "");
  EXPECT_EQ(evicted->at("generation"), 9);
  EXPECT_EQ(evicted->at("evicted"), 3);

  // The bystander's next frame is the answer to its own request: no notice came before it.
  EXPECT_EQ(bystander.request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}).at("type"), "hello_ok");
  const std::lock_guard lock(s.log.mu);
  EXPECT_EQ(s.log.observed, std::vector<std::string>{kKey}) << "an unnamed notice has nothing to push";
}

TEST(Server, RequestsReachTheHooksAndTheQueue) {
  Started s;
  WireClient client(s.config.socket);
  const json status = client.request({{"type", "status"}});
  EXPECT_EQ(status.at("type"), "status");
  EXPECT_EQ(status.at("daemon"), "test") << "the status object comes from the hook";

  const json ok = client.request({{"type", "miss"}, {"key", kKey}, {"count", 3}, {"ack", true}});
  EXPECT_EQ(ok.at("type"), "ok");
  EXPECT_EQ(ok.at("accepted"), 1);
  EXPECT_TRUE(eventually([&] { return s.log.work_added.load() == 1; }));
  const auto job = s.live.queue().find(kKey);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->count, 3u);

  EXPECT_EQ(client.request({{"type", "shutdown"}}).at("type"), "ok");
  EXPECT_TRUE(eventually([&] { return s.log.shutdowns.load() == 1; }));
}

TEST(Server, AMalformedFrameCostsOnlyItsOwnConnection) {
  Started s;
  WireClient good(s.config.socket);
  WireClient bad(s.config.socket);
  bad.send({{"type", "no_such_request"}});
  const auto error = bad.receive();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->at("type"), "error");
  EXPECT_FALSE(bad.receive().has_value()) << "a protocol violation closes the connection";
  EXPECT_EQ(s.live.metrics().get(Counter::protocol_errors), 1u);
  EXPECT_EQ(good.request({{"type", "hello"}, {"pid", 1}, {"client", "t"}}).at("type"), "hello_ok");
}

}  // namespace
}  // namespace kd::daemon
