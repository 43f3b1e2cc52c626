#include "http/http_server.hpp"

#include <memory>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::chrono::seconds kHttpTimeout{10};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
public:
  HttpSession(tcp::socket socket, const HttpRoutes& routes)
      : stream_(std::move(socket)), routes_(routes) {}

  void start() {
    stream_.expires_after(kHttpTimeout);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->respond();
                     });
  }

private:
  void respond() {
    response_.version(request_.version());
    response_.keep_alive(false);
    response_.set(http::field::server, "kdispatchd");
    const auto target = request_.target();
    if (request_.method() != http::verb::get) {
      response_.result(http::status::method_not_allowed);
      response_.set(http::field::content_type, "text/plain");
      response_.body() = "only GET\n";
    } else if (target == "/metrics") {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      response_.body() = routes_.metrics();
    } else if (target == "/status") {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "application/json");
      response_.body() = routes_.status();
    } else {
      response_.result(http::status::not_found);
      response_.set(http::field::content_type, "text/plain");
      response_.body() = "not found: try /metrics or /status\n";
    }
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  beast::tcp_stream stream_;
  const HttpRoutes& routes_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, HttpRoutes routes)
    : io_(io), routes_(std::move(routes)), acceptor_(io) {}

std::uint16_t HttpServer::start(const std::string& listen) {
  const auto colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto port = static_cast<std::uint16_t>(std::stoul(listen.substr(colon + 1)));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) throw Error(ErrorDomain::usage, 0, fmt::format("metrics_listen {}: {}", listen, ec.message()));
  const tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint, ec);
  if (ec)
    throw Error(ErrorDomain::system, ec.value(),
                fmt::format("metrics endpoint: bind {}: {}", listen, ec.message()));
  acceptor_.listen();
  accept_next();
  return acceptor_.local_endpoint().port();
}

void HttpServer::stop() {
  boost::system::error_code ignored;
  if (acceptor_.is_open()) acceptor_.close(ignored);
}

void HttpServer::accept_next() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<HttpSession>(std::move(socket), routes_)->start();
    accept_next();
  });
}

}  // namespace kd::daemon
