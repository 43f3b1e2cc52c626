// One client connection of the Unix-socket server. Lives on the server's io_context thread only.
//
// Replies go out in request order even when some complete later (miss with ack, prewarm and
// cancel answer after their LMDB commit): each request that answers reserves a slot, and slots
// are written in order once filled. `published` notices are not replies and go out at once.
// A client is dropped (after an error frame where the stream still allows one) when it sends a
// malformed, oversized or wrong-version frame, stalls inside a frame longer than the frame
// timeout, or leaves more than the backlog limit of replies unread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio.hpp>

#include "protocol/frame.hpp"

namespace kd::daemon {

class Server;

class Session : public std::enable_shared_from_this<Session> {
public:
  using Socket = boost::asio::local::stream_protocol::socket;

  // `id` is a number the server gives no other connection.
  Session(Server& server, Socket socket, uid_t peer_uid, pid_t peer_pid, std::uint64_t id);

  void start();
  // Sends an error frame, then closes once it is written (reads stop now).
  void fail(const std::string& message);
  // Closes at once; pending replies are discarded.
  void close();

  // Ordered replies: reserve a slot, fill it (possibly later) with a complete frame.
  std::uint64_t reserve_reply();
  void fill_reply(std::uint64_t slot, std::string frame);
  void reply(std::string frame) { fill_reply(reserve_reply(), std::move(frame)); }
  // A published notice, sent at once (subscribers only).
  void push_notice(std::string frame);

  bool subscribed() const noexcept { return subscribed_; }
  void set_subscribed() noexcept { subscribed_ = true; }
  bool closed() const noexcept { return closed_; }
  uid_t peer_uid() const noexcept { return peer_uid_; }
  pid_t peer_pid() const noexcept { return peer_pid_; }
  std::uint64_t id() const noexcept { return id_; }
  // The client instance this connection reports counters for (client_stats); empty before the
  // first report. One connection reports for one instance.
  const std::string& stats_instance() const noexcept { return stats_instance_; }
  void set_stats_instance(std::string instance) { stats_instance_ = std::move(instance); }

private:
  void read_more();
  void on_read(std::size_t bytes);
  void arm_frame_timer();
  void enqueue(std::string frame);
  void write_next();

  Server& server_;
  Socket socket_;
  boost::asio::steady_timer frame_timer_;
  uid_t peer_uid_;
  pid_t peer_pid_;
  std::uint64_t id_;
  std::string stats_instance_;
  protocol::FrameDecoder decoder_;
  std::array<char, 64 * 1024> read_buffer_{};

  std::deque<std::optional<std::string>> slots_;
  std::uint64_t first_slot_ = 0;  // slot id of slots_.front()
  std::deque<std::string> out_;
  std::size_t out_bytes_ = 0;
  bool writing_ = false;
  bool closing_ = false;  // fail(): no more reads, close after the last write
  bool closed_ = false;
  bool subscribed_ = false;
  bool frame_open_ = false;  // a partial frame is buffered and the frame timer runs
};

}  // namespace kd::daemon
