// The client's counter reports (client_stats) against a fake daemon on a Unix socket in the test:
// none to a daemon that does not announce them, one at once on each connection that does, then
// only when a counter changed and the interval passed, and a final one that never blocks.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/daemon_connection.hpp"
#include "runtime/stats_reporter.hpp"
#include "protocol/frame.hpp"
#include "registry/epoch.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A listening socket that accepts one client and speaks frames with it.
class FakeDaemon {
public:
  explicit FakeDaemon(const std::filesystem::path& path) : path_(path) {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 4) != 0)
      throw std::runtime_error("cannot listen on " + path.string());
  }
  ~FakeDaemon() {
    if (fd_ >= 0) ::close(fd_);
    ::close(listen_fd_);
  }
  void accept_client() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    decoder_ = protocol::FrameDecoder();
  }
  void send(json j) {
    j["v"] = 1;
    const std::string frame = protocol::encode_frame(j.dump());
    ASSERT_EQ(::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL), static_cast<ssize_t>(frame.size()));
  }
  // The next frame's object, or nullopt when none arrives within `timeout`.
  std::optional<json> next(std::chrono::milliseconds timeout = 2000ms) {
    for (;;) {
      if (auto p = decoder_.next(); std::holds_alternative<std::string>(p)) return json::parse(std::get<std::string>(p));
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }
  // Skips hello and subscribe.
  void expect_handshake() {
    ASSERT_EQ(next().value_or(json::object()).value("type", ""), "hello");
    ASSERT_EQ(next().value_or(json::object()).value("type", ""), "subscribe");
  }

private:
  std::filesystem::path path_;
  int listen_fd_ = -1;
  int fd_ = -1;
  protocol::FrameDecoder decoder_;
};

void count(ThreadCounter c, int times = 1) {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  for (int i = 0; i < times; ++i) slot->bump(static_cast<std::size_t>(c));
}

void count_fallback(FallbackReason r, int times = 1) {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  for (int i = 0; i < times; ++i) slot->bump(fallback_counter(r));
}

// Lets the connection read what the fake daemon sent.
void pump(DaemonConnection& d) {
  for (int i = 0; i < 100; ++i) {
    pollfd pfd{d.fd(), POLLIN, 0};
    if (::poll(&pfd, 1, 10) > 0) {
      d.on_readable(Clock::now());
      return;
    }
  }
}

// A dispatcher's connection to a fake daemon, through its handshake (hello sent and read; the
// daemon's answer is each test's), and a reporter started after it.
struct Connected {
  explicit Connected(Clock::time_point now = Clock::now()) {
    d.tick(now);
    connected_at_tick = d.connected();
    fake.accept_client();
    fake.expect_handshake();
  }
  test::TempDir dir;
  FakeDaemon fake{dir.path() / "d.sock"};
  DaemonConnection d{{.socket_path = dir.path() / "d.sock"}};
  StatsReporter r;
  bool connected_at_tick = false;
};

TEST(StatsReporter, SnapshotCountsOnlySinceConstruction) {
  count(ThreadCounter::hits, 5);  // an earlier dispatcher's, or a forked parent's
  const StatsReporter r;
  count(ThreadCounter::hits, 2);
  count(ThreadCounter::misses, 3);
  count_fallback(FallbackReason::no_entry, 3);
  count_fallback(FallbackReason::misaligned, 1);
  const protocol::ClientStats s = r.snapshot();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.fallbacks, (std::map<std::string, std::uint64_t>{{"no_entry", 3}, {"misaligned", 1}}));
  EXPECT_EQ(s.pid, ::getpid());
  EXPECT_FALSE(s.program.empty());
  EXPECT_EQ(s.instance.size(), 16u);
  EXPECT_FALSE(protocol::client_stats_problem(s).has_value());
  EXPECT_NE(StatsReporter().instance(), r.instance());
}

TEST(StatsReporter, ProgramNamesAreSanitized) {
  EXPECT_EQ(sanitized_program_name("py\nthon\xff"), "py?thon?");
  EXPECT_EQ(sanitized_program_name(std::string(300, 'x')).size(), protocol::kMaxProgramBytes);
}

TEST(StatsReporter, ReportsOnEachConnectionThenOnlyChangesAtTheInterval) {
  auto now = Clock::now();
  Connected c(now);
  auto& [dir, fake, d, r, connected] = c;
  ASSERT_TRUE(connected);

  r.tick(d, now);  // no hello_ok yet: the daemon may be too old
  EXPECT_FALSE(fake.next(50ms).has_value());
  fake.send({{"type", "hello_ok"}, {"version", 1}, {"features", {"client_stats"}}});
  pump(d);
  ASSERT_NE(d.stats_session(), 0u);

  count(ThreadCounter::hits, 4);
  r.tick(d, now);
  auto first = fake.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->value("type", ""), "client_stats");
  EXPECT_EQ(first->value("hits", 0), 4);
  EXPECT_EQ(first->value("instance", ""), r.instance());

  count(ThreadCounter::hits);
  r.tick(d, now + 100ms);  // changed, but within the interval
  EXPECT_FALSE(fake.next(50ms).has_value());
  r.tick(d, now + StatsReporter::kReportInterval + 100ms);
  auto second = fake.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->value("hits", 0), 5);
  r.tick(d, now + 3 * StatsReporter::kReportInterval);  // nothing changed
  EXPECT_FALSE(fake.next(50ms).has_value());

  r.finish(d);
  auto last = fake.next();
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->value("final", false));
  EXPECT_EQ(last->value("hits", 0), 5);
}

TEST(StatsReporter, TheFinalReportReadsAHelloOkThatArrivedUnread) {
  Connected c;
  auto& [dir, fake, d, r, connected] = c;
  fake.send({{"type", "hello_ok"}, {"version", 1}, {"features", {"client_stats"}}});
  count(ThreadCounter::misses, 2);
  r.finish(d);  // the process stops before its background thread read hello_ok
  auto last = fake.next();
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->value("final", false));
  EXPECT_EQ(last->value("misses", 0), 2);
}

TEST(StatsReporter, NothingGoesToADaemonThatDoesNotAnnounceClientStats) {
  Connected c;
  auto& [dir, fake, d, r, connected] = c;
  fake.send({{"type", "hello_ok"}, {"version", 1}, {"generation", 0}});
  pump(d);
  EXPECT_TRUE(d.connected());
  EXPECT_EQ(d.stats_session(), 0u);
  count(ThreadCounter::hits);
  r.tick(d, Clock::now() + 10s);
  r.finish(d);
  EXPECT_FALSE(fake.next(100ms).has_value());
}

}  // namespace
}  // namespace kd
