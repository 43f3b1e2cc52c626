#include "redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kd::test {
namespace {

#ifndef KD_REDIS_SERVER
#define KD_REDIS_SERVER "redis-server"
#endif

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free loopback port for redis-server");
  ::close(fd);
  return ntohs(a.sin_port);
}

bool answers_ping(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const char ping[] = "PING\r\n";
    char buf[16] = {};
    if (::write(fd, ping, sizeof ping - 1) == sizeof ping - 1 && ::read(fd, buf, sizeof buf - 1) > 0)
      ok = std::string(buf).starts_with("+PONG") || std::string(buf).starts_with("-NOAUTH");
  }
  if (fd >= 0) ::close(fd);
  return ok;
}

}  // namespace

RedisServer::RedisServer(std::filesystem::path dir, std::uint16_t port, std::vector<std::string> extra_args)
    : dir_(std::move(dir)), port_(port), extra_args_(std::move(extra_args)) {
  std::filesystem::create_directories(dir_);
  if (port_ == 0) port_ = free_port();
  start();
}

RedisServer::~RedisServer() { kill(); }

std::string RedisServer::url(unsigned db) const {
  return "redis://127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
}

void RedisServer::start() {
  if (pid_ > 0) return;
  const std::string port = std::to_string(port_), exe = KD_REDIS_SERVER, log = (dir_ / "redis.log").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<std::string> args{exe,  "--port",       port, "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", dir_.string(), "--logfile", log};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    // Not the test's stdout: a pipe reading it would wait for this server (it logs to --logfile).
    if (const int null = ::open("/dev/null", O_RDWR); null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 500; ++i) {
    if (answers_ping(port_)) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error(WIFEXITED(status) && WEXITSTATUS(status) == 127
                                   ? "redis-server is not installed: the remote tier's tests need it (Debian package "
                                     "redis-server; tools/dev/install-deps.sh installs it)"
                                   : "redis-server exited at start (see " + log + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  throw std::runtime_error("redis-server did not answer PING within 5 s on port " + port);
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace kd::test
