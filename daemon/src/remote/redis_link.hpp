// One connection to the fleet's Redis (hiredis), as an RAII object: connect with a timeout, AUTH
// and SELECT, then commands by argument vector, singly or pipelined. Not thread-safe: one owner at
// a time (the tier guards its link with a mutex).
//
// Failures of the link (refused, timed out, closed, an error reply to AUTH) throw RedisDown; a
// RedisDown leaves the link broken and the owner connects again later. An error reply to an
// ordinary command is a value (Reply::error), not an exception.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "remote/remote_settings.hpp"

struct redisContext;

namespace kd::daemon {

// The link cannot be used now (connect, auth, I/O or protocol failure). The message is for users:
// it names the endpoint, never a credential.
class RedisDown : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A reply, copied out of hiredis's reply object.
struct Reply {
  enum class Kind : std::uint8_t { nil, string, integer, array, status, error };
  Kind kind = Kind::nil;
  std::string text;  // string, status and error replies
  long long integer = 0;
  std::vector<Reply> elements;  // arrays
  bool is_nil() const noexcept { return kind == Kind::nil; }
};

// What the link needs to connect: the endpoint and the secret. The password is read once by
// load_remote_password and held here only; it is never part of a message.
struct RedisLogin {
  RemoteEndpoint endpoint;
  std::string user;
  std::string password;
  std::chrono::milliseconds timeout{250};
};

// The password of `s` from its variable or file (llm/api_key.hpp's rules), empty when neither is
// set. Throws kd::Error (usage) naming the variable or file, never the password.
std::string load_remote_password(const RemoteSettings& s);

class RedisLink {
public:
  // Connects, authenticates and selects the database. Throws RedisDown.
  explicit RedisLink(const RedisLogin& login);
  ~RedisLink();
  RedisLink(RedisLink&&) noexcept;
  RedisLink& operator=(RedisLink&&) noexcept;

  // One command. Throws RedisDown when the link fails (the link is then unusable).
  Reply command(const std::vector<std::string_view>& argv);
  // Several commands in one round trip, replies in order. Throws RedisDown.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string_view>>& commands);

private:
  struct Free {
    void operator()(redisContext* c) const noexcept;
  };
  std::unique_ptr<redisContext, Free> ctx_;
  std::string where_;  // the endpoint's URL, for messages
};

}  // namespace kd::daemon
