// The client side of the daemon socket, driven by the background thread: non-blocking connect with
// exponential backoff, hello + subscribe on connect, miss reports, the process's call counters
// (client_stats, to a daemon whose hello_ok announces them), and `published` events in.
//
// With no daemon the application runs unchanged: a failed connect is logged once (spdlog), retried
// after 0.5 s, 1 s, 2 s, ... capped at max_backoff, and the dispatcher polls the cache generation
// meanwhile. Nothing here blocks: sockets are non-blocking and sends use MSG_NOSIGNAL.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"

namespace kd {

struct DaemonConnectionOptions {
  std::filesystem::path socket_path;
  std::chrono::milliseconds first_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  std::size_t max_unsent_reports = 4096;  // beyond this, new miss reports are dropped and counted
};

class DaemonConnection {
public:
  using Clock = std::chrono::steady_clock;

  explicit DaemonConnection(DaemonConnectionOptions options);
  ~DaemonConnection();
  DaemonConnection(const DaemonConnection&) = delete;
  DaemonConnection& operator=(const DaemonConnection&) = delete;

  // Connects when disconnected and the backoff has passed. Never blocks.
  void tick(Clock::time_point now);
  bool connected() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  bool wants_write() const noexcept { return connected() && !out_.empty(); }
  // When the next connection attempt is due (meaningful while disconnected).
  Clock::time_point next_attempt() const noexcept { return next_attempt_; }

  // Records a miss for `full_key_line`; sent now when connected, else on (re)connect. A key is
  // kept (and re-sent to a restarted daemon) until forget() is called for it.
  void report_miss(const std::string& full_key_line, std::uint64_t count);
  void forget(const std::string& full_key_line);

  // Reads what the socket has; returns the published events. Disconnects on EOF, error or a
  // protocol error (oversized frame, bad message).
  std::vector<protocol::Published> on_readable(Clock::time_point now);
  void on_writable(Clock::time_point now);

  // Nonzero once the daemon's hello_ok on the current connection announced client_stats; a new
  // number for each such connection (a report is re-sent to each). 0 while disconnected, before
  // hello_ok, or when the daemon is too old to accept client_stats.
  std::uint64_t stats_session() const noexcept { return stats_session_; }
  // Sends a counter report now (or as soon as the socket takes it). Requires stats_session() != 0.
  void send_stats(const protocol::ClientStats& report);
  // The last report, from the thread that stops the client: one non-blocking send attempt, no
  // logging, nothing retried. When hello_ok has arrived but was not read yet, it is read here
  // (without waiting). A report the socket does not take now is dropped (so is a partial one: the
  // daemon discards a truncated frame). Requires that the background thread has stopped.
  void send_final_stats(const protocol::ClientStats& report) noexcept;

  // True once the daemon's hello_ok on the current connection announced `usage`.
  bool accepts_usage() const noexcept { return connected() && usage_accepted_; }
  // Sends a usage report now (or as soon as the socket takes it). Requires accepts_usage().
  void send_usage(const protocol::Usage& report);
  // Exit path: appends `m` to what send_final_stats sends next; sends nothing itself.
  void queue_final(const protocol::ClientMessage& m) noexcept;

  std::uint64_t reports_sent() const noexcept { return reports_sent_; }
  std::uint64_t reports_dropped() const noexcept { return reports_dropped_; }

private:
  void try_connect(Clock::time_point now);
  void disconnect(Clock::time_point now, const std::string& why);
  void send(const protocol::ClientMessage& m);
  void flush(Clock::time_point now);
  void note_features(const protocol::HelloOk& hello_ok);

  DaemonConnectionOptions options_;
  int fd_ = -1;
  std::chrono::milliseconds backoff_;
  Clock::time_point next_attempt_{};
  bool logged_unreachable_ = false;
  std::string out_;
  protocol::FrameDecoder in_;
  std::map<std::string, std::uint64_t> reported_;  // key line -> miss count last reported
  std::uint64_t reports_sent_ = 0;
  std::uint64_t reports_dropped_ = 0;
  std::uint64_t stats_session_ = 0;
  std::uint64_t stats_sessions_ = 0;  // connections whose daemon accepted client_stats
  bool usage_accepted_ = false;       // the current connection's daemon accepts usage
};

}  // namespace kd
