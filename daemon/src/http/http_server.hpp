// The loopback HTTP endpoint (Boost.Beast): GET /metrics (Prometheus text format 0.0.4: counters
// and gauges, no keys or paths) and GET /status (public_status.hpp: the status message's counts,
// without paths or keys). One request per connection; runs on the daemon's io_context.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <boost/asio.hpp>

namespace kd::daemon {

struct HttpRoutes {
  std::function<std::string()> metrics;  // exposition text
  std::function<std::string()> status;   // JSON text
};

class HttpServer {
public:
  HttpServer(boost::asio::io_context& io, HttpRoutes routes);
  // Listens on `listen` ("127.0.0.1:9464"; port 0 picks one). Returns the bound port. Throws
  // kd::Error when the address cannot be bound.
  std::uint16_t start(const std::string& listen);
  void stop();

private:
  void accept_next();

  boost::asio::io_context& io_;
  HttpRoutes routes_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace kd::daemon
