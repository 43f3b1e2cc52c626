#include "child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

namespace kd::test {

ChildProcess::ChildProcess(const std::function<int()>& body) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 99;
    }
    _exit(code);
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_) kill_and_reap();
}

int ChildProcess::wait() {
  int status = 0;
  pid_t done = -1;
  do {
    done = waitpid(pid_, &status, 0);
  } while (done < 0 && errno == EINTR);
  reaped_ = true;
  if (done != pid_) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void ChildProcess::kill_and_reap() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  wait();
}

Pipe::Pipe() {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

Pipe::~Pipe() {
  if (read_fd_ >= 0) close(read_fd_);
  close_write_end();
}

void Pipe::send(char note) const {
  ssize_t n = -1;
  do {
    n = write(write_fd_, &note, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) throw std::runtime_error("pipe write failed");
}

std::optional<char> Pipe::receive(std::chrono::milliseconds timeout) const {
  pollfd p{read_fd_, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return std::nullopt;
  char note = 0;
  if (read(read_fd_, &note, 1) != 1) return std::nullopt;
  return note;
}

void Pipe::close_write_end() {
  if (write_fd_ >= 0) close(write_fd_);
  write_fd_ = -1;
}

}  // namespace kd::test
