// A small blocking client of kdispatchd's socket, for kdctl, tests and the benchmark: the
// operator's side (ctl). Applications use libkdispatch's own asynchronous client
// (libdispatch/src/client), which shares only the protocol with this one.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/frame.hpp"

namespace kd::daemon {

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

  // Sends `message` with "v" set to the protocol version (framed). Throws kd::Error on failure.
  void send(nlohmann::json message);
  // Sends raw bytes as they are (tests of malformed input).
  void send_raw(std::string_view bytes);
  // The next frame's JSON object; nullopt when the daemon closed the connection or `timeout`
  // passed. Throws kd::Error when the daemon sent something that is not a frame of JSON.
  std::optional<nlohmann::json> receive(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // send + receive, skipping `published` notices. Throws kd::Error when no reply comes.
  nlohmann::json request(nlohmann::json message,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

  int fd() const noexcept { return fd_; }

  // One-shot requests for kdctl: the daemon's status / stats object (the reply's fields).
  // Throws kd::Error when the daemon is not reachable or answers with an error.
  static nlohmann::json status(const std::filesystem::path& socket, std::size_t top_jobs = 0);
  static nlohmann::json stats(const std::filesystem::path& socket);

private:
  int fd_ = -1;
  protocol::FrameDecoder decoder_;
};

}  // namespace kd::daemon
