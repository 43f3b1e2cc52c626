// A small blocking client of kdispatchd's socket, for kdctl, tests and the benchmarks: the
// operator's side (ctl). Applications use libkdispatch's own asynchronous client
// (libdispatch/src/runtime), which shares the protocol's codec (libdispatch/src/protocol) with
// this one: requests and replies are the protocol's structs.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "protocol/frame.hpp"
#include "protocol/requests.hpp"

namespace kd::daemon {

// What the daemon answered a request: its reply, or the error it sent instead (a refused request,
// a failed commit).
template <class Reply>
using Answer = std::variant<Reply, protocol::ErrorMessage>;

class Client {
public:
  // Connects to the daemon's socket. Throws kd::Error (system) when nothing listens there or the
  // socket cannot be reached.
  explicit Client(const std::filesystem::path& socket);
  ~Client();
  Client(Client&& other) noexcept;
  Client& operator=(Client&& other) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends a request of the protocol (messages.hpp, requests.hpp), framed. Throws kd::Error on
  // failure.
  template <class Request>
  void send(const Request& request) {
    send_raw(protocol::encode(request));
  }
  // Sends `request` and returns the daemon's answer, skipping `published` notices. Throws
  // kd::Error when no reply comes within `timeout` (or the daemon closed the connection) and when
  // the reply does not decode as Request::Reply.
  template <class Request>
  Answer<typename Request::Reply> call(const Request& request,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    send(request);
    for (;;) {
      auto decoded = protocol::decode_one_of<typename Request::Reply, protocol::ErrorMessage, protocol::Published>(
          next_reply_payload(timeout));
      if (auto* err = std::get_if<protocol::ProtocolError>(&decoded))
        throw Error(ErrorDomain::data, 0, "kdispatchd sent a reply this kdctl cannot read: " + err->message);
      auto& message = std::get<0>(decoded);
      if (auto* reply = std::get_if<typename Request::Reply>(&message)) return std::move(*reply);
      if (auto* refused = std::get_if<protocol::ErrorMessage>(&message)) return std::move(*refused);
    }
  }

  // The raw side, for tests of the wire itself (malformed and hostile input) and the benchmark:
  // sends `message` as it is with "v" set to the protocol version (framed); throws kd::Error on
  // failure.
  void send(nlohmann::json message);
  // Sends raw bytes as they are.
  void send_raw(std::string_view bytes);
  // The next frame's JSON object; nullopt when the daemon closed the connection or `timeout`
  // passed. Throws kd::Error when the daemon sent something that is not a frame of JSON.
  std::optional<nlohmann::json> receive(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // send + receive, skipping `published` notices. Throws kd::Error when no reply comes.
  nlohmann::json request(nlohmann::json message,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

  int fd() const noexcept { return fd_; }

  // One-shot requests: the daemon's status (with the top `top_jobs` jobs) and stats replies.
  // Throws kd::Error when the daemon is not reachable or answers with an error.
  static protocol::Status status(const std::filesystem::path& socket, std::size_t top_jobs = 0);
  static protocol::Stats stats(const std::filesystem::path& socket);

private:
  // The next frame's payload; nullopt when the daemon closed the connection or `timeout` passed.
  std::optional<std::string> receive_payload(std::chrono::milliseconds timeout);
  // The next frame's payload; throws kd::Error where receive_payload returns nullopt.
  std::string next_reply_payload(std::chrono::milliseconds timeout);

  int fd_ = -1;
  protocol::FrameDecoder decoder_;
};

// The reply of an answer; throws kd::Error ("kdispatchd: <its message>") when it is an error.
template <class Reply>
Reply reply_or_throw(Answer<Reply> answer) {
  if (auto* refused = std::get_if<protocol::ErrorMessage>(&answer))
    throw Error(ErrorDomain::data, 0, "kdispatchd: " + refused->message);
  return std::get<Reply>(std::move(answer));
}

}  // namespace kd::daemon
