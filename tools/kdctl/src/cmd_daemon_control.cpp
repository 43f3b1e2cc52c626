// kdctl stop: a graceful shutdown of kdispatchd through its socket, waiting until it exited.
// kdctl cancel KEY: cancels a queued or running job.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "commands.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"

namespace kd::kdctl {
namespace {

using Clock = std::chrono::steady_clock;

struct StopArgs : DaemonArgs {
  int timeout_s = 60;
};

constexpr std::chrono::milliseconds kExitPoll{20};

// Whether the daemon with `pid` and this cache has exited. The daemon holds an exclusive flock on
// <cache>/kdispatchd.lock until its process ends (after its last commit), so a lock we can take
// means it is gone; where the lock file cannot be opened, the pid is asked instead (a process of
// another user answers EPERM while it lives).
bool daemon_exited(const std::filesystem::path& cache_dir, long long pid) {
  const auto lock = cache_dir / "kdispatchd.lock";
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    ::close(fd);  // releases the shared lock at once: a daemon starting now is not refused
    return free;
  }
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

int run_stop(const StopArgs& a) {
  const std::filesystem::path socket = socket_of(a);
  std::optional<daemon::Client> client;
  protocol::Status status;
  try {
    client.emplace(socket);
    status = daemon::reply_or_throw(client->call(protocol::StatusQuery{}, std::chrono::seconds(10)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl stop: no kdispatchd answers on %s; nothing to stop (%s)\n", socket.c_str(), e.what());
    return kFailure;
  }
  const long long pid = status.pid;
  const std::filesystem::path cache_dir = status.cache_dir;
  try {
    const auto answer = client->call(protocol::Shutdown{}, std::chrono::seconds(10));
    if (const auto* refused = std::get_if<protocol::ErrorMessage>(&answer)) {
      std::fprintf(stderr, "kdctl stop: kdispatchd (pid %lld) refused: %s\n", pid, refused->message.c_str());
      return kFailure;
    }
  } catch (const std::exception& e) {
    // It may have closed the connection while shutting down for another reason: wait all the same.
    std::fprintf(stderr, "kdctl stop: kdispatchd (pid %lld) did not acknowledge (%s); waiting for it to exit\n", pid,
                 e.what());
  }
  std::printf("kdispatchd (pid %lld) on %s is shutting down (running jobs go back to the queue)\n", pid,
              socket.c_str());
  std::fflush(stdout);
  client.reset();
  const auto deadline = Clock::now() + std::chrono::seconds(a.timeout_s);
  while (!daemon_exited(cache_dir, pid)) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "kdctl stop: kdispatchd (pid %lld) has not exited after %d s; it is still stopping (a "
                           "running search ends its current candidate first)\n",
                   pid, a.timeout_s);
      return kFailure;
    }
    std::this_thread::sleep_for(kExitPoll);
  }
  std::printf("kdispatchd (pid %lld) stopped\n", pid);
  return kOk;
}

struct CancelArgs : DaemonArgs {
  std::string key;
};

int run_cancel(const CancelArgs& a) {
  const auto parsed = parse_op_key(a.key);  // any operator's key (issue 33)
  if (const auto* e = std::get_if<KeyError>(&parsed)) {
    std::fprintf(stderr, "kdctl cancel: \"%s\": %s\n", a.key.c_str(), e->message.c_str());
    return kUsage;
  }
  const OpKey& key = std::get<OpKey>(parsed);
  const bool keyed = std::visit([](const auto& k) { return k.device.has_value(); }, key);
  const std::string canonical = keyed ? op_full_line(key) : op_shape_line(key);
  const std::filesystem::path socket = socket_of(a);
  daemon::Answer<protocol::CancelOk> answer;
  try {
    daemon::Client client(socket);
    answer = client.call(protocol::Cancel{canonical});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl cancel: daemon at %s not reachable: %s\n", socket.c_str(), e.what());
    return kFailure;
  }
  if (const auto* refused = std::get_if<protocol::ErrorMessage>(&answer)) {
    std::fprintf(stderr, "kdctl cancel: daemon refused: %s\n", refused->message.c_str());
    return kFailure;
  }
  if (!std::get<protocol::CancelOk>(answer).cancelled) {
    std::fprintf(stderr, "kdctl cancel: no queued or running job for %s; nothing cancelled\n", canonical.c_str());
    return kFailure;
  }
  std::printf("cancelled %s\n", canonical.c_str());
  return kOk;
}

}  // namespace

void setup_stop(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_stop);
  add_daemon_flags(sub, *a);
  sub.add_option("--timeout", a->timeout_s, "Seconds to wait for the daemon to exit (default 60)");
  sub.footer("Asks kdispatchd for a graceful shutdown (as SIGTERM: running jobs go back to the queue, everything\n"
             "pending is committed, the socket is removed) and waits until its process has exited.\n"
             "Exit codes: 0 stopped, 1 no daemon answers on the socket or it did not exit within --timeout, 2 usage.");
}

void setup_cancel(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_cancel);
  sub.add_option("key", a->key,
                 "Key line of the job: a shape line, a full key line or the `linear` shorthand; a GEMM's or a row "
                 "operator's (rmsnorm, layernorm, softmax)")
      ->required();
  add_daemon_flags(sub, *a);
  sub.footer("A shape line and a full key line (with a device part) name different jobs, as `kdctl status` lists them.\n"
             "A running search stops at once; the job stays cancelled until a prewarm queues it again.\n"
             "Exit codes: 0 cancelled, 1 no daemon, or no queued or running job for the key, 2 a key that does not parse.");
}

}  // namespace kd::kdctl
