// A real redis-server for the remote tier's tests: started on a free loopback port with a
// temporary directory, no persistence, stopped (SIGKILL) at destruction. The executable is
// KD_REDIS_SERVER (a compile definition: where configure found it), else `redis-server` in PATH.
// It is not skipped when missing: the constructor throws, naming the Debian package, because CI
// installs it (tools/dev/install-deps.sh).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kd::test {

class RedisServer {
public:
  // Starts redis-server on a free port (or `port`) with `extra_args` (such as --requirepass) and
  // waits until it answers.
  explicit RedisServer(std::filesystem::path dir, std::uint16_t port = 0, std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  std::string url(unsigned db = 0) const;  // redis://127.0.0.1:PORT/DB
  // SIGKILL: Redis vanishes as a crashed or unreachable server does. start() brings it back on the
  // same port, empty (no persistence).
  void kill();
  void start();
  bool running() const noexcept { return pid_ > 0; }

private:
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::vector<std::string> extra_args_;
};

}  // namespace kd::test
