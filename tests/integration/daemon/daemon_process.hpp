// Starts the real kdispatchd executable (KD_DAEMON_EXE, a compile definition) as a child process
// on a socket and cache inside a test's temporary directory, with the metrics endpoint on an
// ephemeral loopback port. Used by the integration tests and the load benchmark.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "support/scoped_env.hpp"

namespace kd::test {

// While alive, daemons started from this process see no GPU (CUDA_VISIBLE_DEVICES is empty), as on
// CI: for tests that assert what the daemon does without a search backend, so that they hold on a
// GPU machine too.
struct HiddenGpus {
  ScopedEnv cuda_visible_devices{"CUDA_VISIBLE_DEVICES", ""};
};

class DaemonProcess {
public:
  // Writes <dir>/kdispatchd.toml (`toml` text, after `buckets = "off"` unless `toml` or
  // `extra_args` set buckets), starts the daemon with --config on it plus `extra_args`, and waits
  // until the socket answers (throws std::runtime_error after 20 s, with the daemon's log).
  DaemonProcess(std::filesystem::path dir, std::vector<std::string> extra_args = {},
                std::string toml = "");
  // SIGKILL and reap when still running.
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::filesystem::path& socket() const noexcept { return socket_; }
  const std::filesystem::path& cache_dir() const noexcept { return cache_dir_; }
  std::uint16_t metrics_port() const noexcept { return metrics_port_; }
  pid_t pid() const noexcept { return pid_; }
  bool running();
  // Sends `signo` and waits for the exit; returns the wait status (as waitpid gives it).
  int stop(int signo, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  std::string log() const;

private:
  std::filesystem::path dir_, socket_, cache_dir_, port_file_, log_file_;
  pid_t pid_ = -1;
  std::uint16_t metrics_port_ = 0;
};

// Runs the daemon executable with `args` to completion (no waiting for a socket); returns its
// exit code and stdout+stderr.
struct Finished {
  int exit_code = -1;
  std::string output;
};
Finished run_daemon_command(const std::vector<std::string>& args,
                            const std::vector<std::string>& env = {});

// One HTTP/1.0 GET on 127.0.0.1:port; returns the body (throws on failure or a non-200 status).
std::string http_get(std::uint16_t port, const std::string& target);

// A valid full key line differing by `n` (n >= 1).
std::string test_key(int n);

// CPU seconds (user + system) process `pid` has used, from /proc/PID/stat (benchmarks and the
// fuzz test print the daemon's).
double cpu_seconds(pid_t pid);

}  // namespace kd::test
