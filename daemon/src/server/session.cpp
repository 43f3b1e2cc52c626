#include "server/session.hpp"

#include <spdlog/spdlog.h>

#include "server/server.hpp"

namespace kd::daemon {

namespace asio = boost::asio;

Session::Session(Server& server, Socket socket, uid_t peer_uid, pid_t peer_pid, std::uint64_t id)
    : server_(server), socket_(std::move(socket)), frame_timer_(server.io()),
      peer_uid_(peer_uid), peer_pid_(peer_pid), id_(id) {}

void Session::start() { read_more(); }

void Session::read_more() {
  if (closing_ || closed_) return;
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                            if (ec) {
                              self->close();
                              return;
                            }
                            self->on_read(n);
                          });
}

void Session::on_read(std::size_t bytes) {
  if (closed_) return;
  decoder_.feed(std::string_view(read_buffer_.data(), bytes));
  bool completed_one = false;
  for (;;) {
    auto next = decoder_.next();
    if (auto* payload = std::get_if<std::string>(&next)) {
      completed_one = true;
      server_.metrics().add(Counter::frames_received);
      server_.handle_payload(*this, *payload);
      if (closing_ || closed_) return;
      continue;
    }
    if (std::holds_alternative<protocol::FrameError>(next)) {
      server_.metrics().add(Counter::protocol_errors);
      fail("protocol: frame longer than the " +
           std::to_string(protocol::kMaxFramePayloadBytes) + " byte limit");
      return;
    }
    break;  // NeedMore
  }
  if (decoder_.buffered_bytes() == 0) {
    frame_open_ = false;
    frame_timer_.cancel();
  } else if (!frame_open_ || completed_one) {
    arm_frame_timer();  // a new partial frame starts its clock
  }
  read_more();
}

void Session::arm_frame_timer() {
  frame_open_ = true;
  frame_timer_.expires_after(server_.config().frame_timeout);
  frame_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_ || !self->frame_open_) return;
    self->server_.metrics().add(Counter::clients_dropped);
    spdlog::info("dropping client pid {}: frame incomplete after {} ms", self->peer_pid_,
                 self->server_.config().frame_timeout.count());
    self->fail("protocol: frame incomplete after " +
               std::to_string(self->server_.config().frame_timeout.count()) + " ms");
  });
}

void Session::fail(const std::string& message) {
  if (closing_ || closed_) return;
  slots_.clear();  // replies still pending are discarded: the error is the last frame
  enqueue(error_frame(message));
  closing_ = true;
  frame_timer_.cancel();
  boost::system::error_code ignored;
  socket_.shutdown(Socket::shutdown_receive, ignored);
  if (!writing_ && out_.empty()) close();
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  frame_timer_.cancel();
  boost::system::error_code ignored;
  socket_.close(ignored);
  server_.forget(shared_from_this());
}

std::uint64_t Session::reserve_reply() {
  slots_.emplace_back(std::nullopt);
  return first_slot_ + slots_.size() - 1;
}

void Session::fill_reply(std::uint64_t slot, std::string frame) {
  if (closed_ || closing_ || slot < first_slot_ || slot - first_slot_ >= slots_.size()) return;
  slots_[slot - first_slot_] = std::move(frame);
  while (!slots_.empty() && slots_.front()) {
    enqueue(std::move(*slots_.front()));
    slots_.pop_front();
    ++first_slot_;
    if (closed_) return;
  }
}

void Session::push_notice(std::string frame) {
  if (closed_ || closing_) return;
  enqueue(std::move(frame));
}

void Session::enqueue(std::string frame) {
  out_bytes_ += frame.size();
  out_.push_back(std::move(frame));
  if (!closing_ && out_bytes_ > server_.config().max_client_backlog_bytes) {
    server_.metrics().add(Counter::clients_dropped);
    spdlog::info("dropping client pid {}: {} reply bytes unread", peer_pid_, out_bytes_);
    close();
    return;
  }
  if (!writing_) write_next();
}

void Session::write_next() {
  if (closed_) return;
  if (out_.empty()) {
    if (closing_) close();
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_.front()),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      self->writing_ = false;
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->out_bytes_ -= self->out_.front().size();
                      self->out_.pop_front();
                      self->write_next();
                    });
}

}  // namespace kd::daemon
