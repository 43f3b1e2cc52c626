#include "ctl_client/ctl_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::daemon {

using nlohmann::json;

Client::Client(const std::filesystem::path& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = socket.string();
  if (path.size() >= sizeof addr.sun_path)
    throw Error(ErrorDomain::usage, 0, "socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  KD_SYS_CHECK(fd_, path);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw_system_error(err, "connect", path + " (is kdispatchd running?)", KD_WHERE);
  }
}

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}

Client::Client(Client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), decoder_(std::move(other.decoder_)) {}

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    decoder_ = std::move(other.decoder_);
  }
  return *this;
}

void Client::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    KD_SYS_CHECK(n, "kdispatchd socket");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void Client::send(json message) {
  message["v"] = protocol::kProtocolVersion;
  send_raw(protocol::encode_frame(message.dump()));
}

std::optional<std::string> Client::receive_payload(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto next = decoder_.next();
    if (auto* payload = std::get_if<std::string>(&next)) return std::move(*payload);
    if (std::holds_alternative<protocol::FrameError>(next))
      throw Error(ErrorDomain::data, 0, "kdispatchd sent an oversized frame");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    KD_SYS_CHECK(ready, "poll kdispatchd socket");
    if (ready == 0) return std::nullopt;
    char buf[64 * 1024];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNRESET) return std::nullopt;
    KD_SYS_CHECK(n, "recv kdispatchd socket");
    if (n == 0) return std::nullopt;
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

std::string Client::next_reply_payload(std::chrono::milliseconds timeout) {
  auto payload = receive_payload(timeout);
  if (!payload) throw Error(ErrorDomain::system, 0, "kdispatchd closed the connection or timed out");
  return std::move(*payload);
}

std::optional<json> Client::receive(std::chrono::milliseconds timeout) {
  const auto payload = receive_payload(timeout);
  if (!payload) return std::nullopt;
  json j = json::parse(*payload, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(ErrorDomain::data, 0, "kdispatchd sent a frame that is not a JSON object");
  return j;
}

json Client::request(json message, std::chrono::milliseconds timeout) {
  send(std::move(message));
  for (;;) {
    auto reply = receive(timeout);
    if (!reply) throw Error(ErrorDomain::system, 0, "kdispatchd closed the connection or timed out");
    if (reply->value("type", "") != "published") return *reply;
  }
}

protocol::Status Client::status(const std::filesystem::path& socket, std::size_t top_jobs) {
  Client c(socket);
  return reply_or_throw(c.call(protocol::StatusQuery{top_jobs}));
}

protocol::Stats Client::stats(const std::filesystem::path& socket) {
  Client c(socket);
  return reply_or_throw(c.call(protocol::StatsQuery{}));
}

}  // namespace kd::daemon
