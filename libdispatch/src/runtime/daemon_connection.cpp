#include "runtime/daemon_connection.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace kd {

DaemonConnection::DaemonConnection(DaemonConnectionOptions options)
    : options_(std::move(options)), backoff_(options_.first_backoff) {}

DaemonConnection::~DaemonConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void DaemonConnection::tick(Clock::time_point now) {
  if (fd_ < 0 && now >= next_attempt_) try_connect(now);
}

void DaemonConnection::try_connect(Clock::time_point now) {
  const std::string path = options_.socket_path.string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string why;
  int fd = -1;
  if (path.size() >= sizeof(addr.sun_path)) {
    why = "socket path too long";
  } else {
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::strerror(errno);
    } else if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      // A Unix socket connects at once or fails; EAGAIN (backlog full) is retried like a failure.
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    if (!logged_unreachable_) {
      spdlog::info("kdispatch: no daemon at {} ({}); misses are not reported, the cache is polled "
                   "instead; retrying with backoff",
                   path, why);
      logged_unreachable_ = true;
    }
    next_attempt_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    return;
  }
  fd_ = fd;
  backoff_ = options_.first_backoff;
  in_ = protocol::FrameDecoder();
  out_.clear();
  spdlog::info("kdispatch: connected to daemon at {}", path);
  logged_unreachable_ = false;
  send(protocol::Hello{static_cast<std::int64_t>(::getpid()), "libkdispatch"});
  send(protocol::Subscribe{});
  for (const auto& [key, count] : reported_) {
    send(protocol::Miss{{{key, count}}});
    ++reports_sent_;
  }
  flush(now);
}

void DaemonConnection::disconnect(Clock::time_point now, const std::string& why) {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  out_.clear();
  stats_session_ = 0;
  usage_accepted_ = false;
  spdlog::info("kdispatch: daemon connection lost ({}); polling the cache until it returns", why);
  next_attempt_ = now + backoff_;
}

void DaemonConnection::send(const protocol::ClientMessage& m) { out_ += protocol::encode_message(m); }

void DaemonConnection::report_miss(const std::string& full_key_line, std::uint64_t count) {
  auto it = reported_.find(full_key_line);
  if (it != reported_.end()) return;  // once per process until published
  if (reported_.size() >= options_.max_unsent_reports) {
    ++reports_dropped_;
    return;
  }
  reported_.emplace(full_key_line, count);
  if (fd_ >= 0) {
    send(protocol::Miss{{{full_key_line, count}}});
    ++reports_sent_;
    flush(Clock::now());
  }
}

void DaemonConnection::send_stats(const protocol::ClientStats& report) {
  if (fd_ < 0 || stats_session_ == 0) return;
  send(report);
  flush(Clock::now());
}

void DaemonConnection::note_features(const protocol::HelloOk& hello_ok) {
  const auto& f = hello_ok.features;
  if (std::find(f.begin(), f.end(), protocol::kFeatureClientStats) != f.end())
    stats_session_ = ++stats_sessions_;
  usage_accepted_ = std::find(f.begin(), f.end(), protocol::kFeatureUsage) != f.end();
}

void DaemonConnection::send_usage(const protocol::Usage& report) {
  if (!accepts_usage()) return;
  send(report);
  flush(Clock::now());
}

void DaemonConnection::queue_final(const protocol::ClientMessage& m) noexcept {
  if (fd_ < 0) return;
  try {
    out_ += protocol::encode_message(m);
  } catch (...) {
    // out of memory at exit: not sent
  }
}

void DaemonConnection::send_final_stats(const protocol::ClientStats& report) noexcept {
  if (fd_ < 0) return;
  try {
    // A short-lived process may stop before the background thread read hello_ok: look for it in
    // what has already arrived, without waiting and without logging (this runs at exit).
    char buf[4096];
    for (ssize_t n; stats_session_ == 0 && (n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) > 0;) {
      in_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      for (auto next = in_.next(); std::holds_alternative<std::string>(next); next = in_.next()) {
        const auto decoded = protocol::decode_daemon_message(std::get<std::string>(next));
        const auto* m = std::get_if<protocol::DaemonMessage>(&decoded);
        const auto* a = m != nullptr ? std::get_if<protocol::HelloOk>(m) : nullptr;
        if (a != nullptr) note_features(*a);
      }
    }
    if (stats_session_ == 0) return;
    out_ += protocol::encode_message(report);
    const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) out_.erase(0, static_cast<std::size_t>(n));
  } catch (...) {
    // out of memory while the process exits: the daemon keeps the last periodic report
  }
}

void DaemonConnection::forget(const std::string& full_key_line) { reported_.erase(full_key_line); }

void DaemonConnection::flush(Clock::time_point now) {
  while (fd_ >= 0 && !out_.empty()) {
    const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // poll for POLLOUT
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      disconnect(now, std::strerror(errno));
    }
  }
}

void DaemonConnection::on_writable(Clock::time_point now) { flush(now); }

std::vector<protocol::Published> DaemonConnection::on_readable(Clock::time_point now) {
  std::vector<protocol::Published> events;
  char buf[16384];
  while (fd_ >= 0) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    disconnect(now, n == 0 ? "closed by the daemon" : std::strerror(errno));
    return events;
  }
  for (;;) {
    auto next = in_.next();
    if (std::holds_alternative<protocol::FrameDecoder::NeedMore>(next)) break;
    if (auto* err = std::get_if<protocol::FrameError>(&next)) {
      disconnect(now, std::string(protocol::to_string(*err)));
      break;
    }
    auto decoded = protocol::decode_daemon_message(std::get<std::string>(next));
    if (auto* perr = std::get_if<protocol::ProtocolError>(&decoded)) {
      disconnect(now, perr->message);
      break;
    }
    const auto& m = std::get<protocol::DaemonMessage>(decoded);
    if (auto* p = std::get_if<protocol::Published>(&m)) {
      events.push_back(*p);
    } else if (auto* e = std::get_if<protocol::ErrorMessage>(&m)) {
      spdlog::warn("kdispatch: daemon says: {}", e->message);
    } else if (auto* a = std::get_if<protocol::HelloOk>(&m)) {
      note_features(*a);
    }
  }
  return events;
}

}  // namespace kd
