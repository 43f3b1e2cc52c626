// The loopback HTTP endpoint (http/http_server.hpp) on a real TCP socket: routes, status codes and
// content types, one request per connection, binding errors, and stop().
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include <boost/asio.hpp>

#include "common/error.hpp"
#include "http/http_server.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// The server on its own io_context thread, as in the daemon.
class LiveServer {
public:
  explicit LiveServer(HttpRoutes routes, const std::string& listen = "127.0.0.1:0")
      : server_(io_, std::move(routes)) {
    port_ = server_.start(listen);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~LiveServer() {
    io_.stop();
    thread_.join();
  }
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  void stop() {
    std::atomic<bool> done{false};
    asio::post(io_, [&] {
      server_.stop();
      done = true;
    });
    while (!done) std::this_thread::yield();
  }

private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  HttpServer server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// Sends `request` as is and reads until the server closes (it answers one request per connection).
// `closed` is how the stream ended: eof, or connection_reset where the server dropped unread bytes.
std::string ask(std::uint16_t port, const std::string& request, boost::system::error_code& closed) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(socket, asio::buffer(request));
  std::string answer;
  asio::read(socket, asio::dynamic_buffer(answer), closed);
  return answer;
}

std::string ask(std::uint16_t port, const std::string& request) {
  boost::system::error_code closed;
  std::string answer = ask(port, request, closed);
  EXPECT_EQ(closed, asio::error::eof) << closed.message();
  return answer;
}

std::string get(std::uint16_t port, const std::string& target) {
  return ask(port, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

std::string body_of(const std::string& answer) {
  const auto end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

bool has_header(const std::string& answer, const std::string& header) {
  return answer.substr(0, answer.find("\r\n\r\n")).find("\r\n" + header + "\r\n") != std::string::npos;
}

HttpRoutes fixed_routes() {
  return {[] { return std::string("kdispatch_test_total 1\n"); }, [] { return std::string(R"({"generation":3})"); }};
}

TEST(HttpServer, MetricsAndStatusAnswerWithTheirContentTypes) {
  LiveServer s(fixed_routes());
  ASSERT_NE(s.port(), 0) << "port 0 picks a free port and start() returns it";

  const std::string metrics = get(s.port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << metrics;
  EXPECT_TRUE(has_header(metrics, "Content-Type: text/plain; version=0.0.4; charset=utf-8")) << metrics;
  EXPECT_TRUE(has_header(metrics, "Connection: close")) << metrics;
  EXPECT_EQ(body_of(metrics), "kdispatch_test_total 1\n");

  const std::string status = get(s.port(), "/status");
  EXPECT_EQ(status.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << status;
  EXPECT_TRUE(has_header(status, "Content-Type: application/json")) << status;
  EXPECT_EQ(body_of(status), R"({"generation":3})");
}

TEST(HttpServer, EveryRequestAsksTheRouteAfresh) {
  std::atomic<int> scrapes{0};
  LiveServer s({[&] { return "scrape " + std::to_string(++scrapes) + "\n"; }, [] { return std::string("{}"); }});
  EXPECT_EQ(body_of(get(s.port(), "/metrics")), "scrape 1\n");
  EXPECT_EQ(body_of(get(s.port(), "/metrics")), "scrape 2\n");
  get(s.port(), "/status");
  EXPECT_EQ(scrapes.load(), 2) << "/status must not run the metrics route";
}

TEST(HttpServer, AnUnknownPathIsNotFoundAndAnythingButGetIsNotAllowed) {
  std::atomic<int> calls{0};
  LiveServer s({[&] { ++calls; return std::string("m"); }, [&] { ++calls; return std::string("{}"); }});

  const std::string missing = get(s.port(), "/metrics/extra");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << missing;
  EXPECT_NE(body_of(missing).find("/metrics or /status"), std::string::npos) << "the answer names the routes";

  const std::string post = ask(s.port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << post;
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServer, ASilentConnectionDoesNotHoldUpTheNextOne) {
  LiveServer s(fixed_routes());
  asio::io_context io;
  tcp::socket silent(io);
  silent.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port()));
  asio::write(silent, asio::buffer(std::string("GET /metr")));  // half a request line, then nothing
  EXPECT_EQ(body_of(get(s.port(), "/metrics")), "kdispatch_test_total 1\n");
}

TEST(HttpServer, AGarbledRequestClosesTheConnectionWithoutAnAnswer) {
  LiveServer s(fixed_routes());
  boost::system::error_code closed;
  EXPECT_EQ(ask(s.port(), "\x01\x02 not http at all\r\n\r\n", closed), "");
  EXPECT_TRUE(closed == asio::error::eof || closed == asio::error::connection_reset) << closed.message();
  EXPECT_EQ(body_of(get(s.port(), "/metrics")), "kdispatch_test_total 1\n") << "the server keeps serving";
}

TEST(HttpServer, LocalhostNamesTheIpv4Loopback) {
  LiveServer s(fixed_routes(), "localhost:0");
  EXPECT_EQ(body_of(get(s.port(), "/status")), R"({"generation":3})");
}

TEST(HttpServer, AnAddressThatIsNoAddressIsAUsageErrorNamingTheSetting) {
  asio::io_context io;
  HttpServer server(io, fixed_routes());
  try {
    server.start("not-an-address:9464");
    FAIL() << "started on a name that is not an address";
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::usage);
    EXPECT_NE(std::string(e.what()).find("metrics_listen not-an-address:9464"), std::string::npos) << e.what();
  }
}

TEST(HttpServer, APortInUseIsAnErrorNamingTheAddress) {
  asio::io_context io;
  tcp::acceptor taken(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = taken.local_endpoint().port();
  HttpServer server(io, fixed_routes());
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  try {
    server.start(listen);
    FAIL() << "bound a port another socket listens on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bind " + listen), std::string::npos) << e.what();
  }
}

TEST(HttpServer, StopClosesTheListeningSocket) {
  LiveServer s(fixed_routes());
  const auto port = s.port();
  ASSERT_EQ(body_of(get(port, "/metrics")), "kdispatch_test_total 1\n");
  s.stop();
  asio::io_context io;
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_EQ(ec, asio::error::connection_refused) << ec.message();
}

}  // namespace
}  // namespace kd::daemon
