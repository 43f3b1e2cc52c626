// Child processes for the store tests. LMDB allows one environment per directory per process, so
// a test's readers run in forked children and report through their exit status and a pipe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>

namespace kd::test {

// Forks; the child runs `body` and _exits with its return value (99 if it throws), never returning
// into the test framework (so no TempDir destructor or gtest handler runs in the child).
class ChildProcess {
public:
  explicit ChildProcess(const std::function<int()>& body);
  ~ChildProcess();  // kills (SIGKILL) and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // Waits for the exit: the exit code, 128 + signal number when killed by a signal.
  int wait();
  // SIGKILL, then reap.
  void kill_and_reap();

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// A pipe for one-byte notes between parent and children (created before fork).
class Pipe {
public:
  Pipe();
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  void send(char note) const;
  // The next note, or nullopt after `timeout` or at end of file.
  std::optional<char> receive(std::chrono::milliseconds timeout) const;
  void close_write_end();

private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace kd::test
