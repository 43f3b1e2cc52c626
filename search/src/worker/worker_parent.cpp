#include "worker/worker_parent.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "common/error.hpp"
#include "worker/frame.hpp"
#include "worker/protocol.hpp"

extern char** environ;

namespace kd::worker {

// A spawned worker: its pid and our end of the socket. Destruction kills and reaps it.
class ChildProcess {
public:
  explicit ChildProcess(const std::vector<std::string>& argv) {
    if (argv.empty()) throw Error(ErrorDomain::usage, 0, "worker: empty argv");
    int sv[2];
    KD_SYS_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), "worker socketpair");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    // dup2 onto 0 and 1 clears close-on-exec on those; every other descriptor of ours stays
    // closed in the child.
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const bool search_path = argv[0].find('/') == std::string::npos;
    const int rc = search_path ? posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ)
                               : posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(sv[1]);
    if (rc != 0) {
      ::close(sv[0]);
      throw_system_error(rc, "posix_spawn", argv[0], KD_WHERE);
    }
    fd_ = sv[0];
  }
  ~ChildProcess() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap();
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }

  // Waits for the child to end; "exit status N" or "signal N (name)". Blocks.
  std::string reap() {
    if (pid_ <= 0) return status_;
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    pid_ = 0;
    if (r < 0) return status_ = "unknown (waitpid failed)";
    if (WIFSIGNALED(status)) {
      status_ = fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else {
      status_ = fmt::format("exit status {}", WEXITSTATUS(status));
    }
    return status_;
  }
  // Reaps the child if it has ended within `grace`, else kills it first.
  std::string reap_within(std::chrono::milliseconds grace) {
    const auto until = std::chrono::steady_clock::now() + grace;
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = 0;
        status_ = WIFSIGNALED(status)
                      ? fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
                      : fmt::format("exit status {}", WEXITSTATUS(status));
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    return reap();
  }

private:
  pid_t pid_ = 0;
  int fd_ = -1;
  std::string status_;
};

WorkerSpawn default_worker_spawn(int device_ordinal, const std::filesystem::path& roofline_dir) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string program = "kdispatch-worker";
  if (!ec && std::filesystem::exists(self.parent_path() / program)) program = (self.parent_path() / program).string();
  WorkerSpawn s;
  s.argv = {program, "--device", std::to_string(device_ordinal)};
  if (!roofline_dir.empty()) {
    s.argv.push_back("--roofline-dir");
    s.argv.push_back(roofline_dir.string());
  }
  return s;
}

WorkerParent::WorkerParent(WorkerSpawn spawn) : spawn_(std::move(spawn)) {}

WorkerParent::~WorkerParent() {
  if (!child_) return;
  try {
    write_frame(child_->fd(), shutdown_frame());
    ::shutdown(child_->fd(), SHUT_WR);
    child_->reap_within(std::chrono::seconds(1));
  } catch (const std::exception&) {
  }
  child_.reset();
}

pid_t WorkerParent::pid() const noexcept { return child_ ? child_->pid() : 0; }

const nlohmann::json& WorkerParent::ensure_started() {
  if (child_) return ready_;
  if (starts_ > 0) ++restarts_;
  ++starts_;
  auto child = std::make_unique<ChildProcess>(spawn_.argv);
  Frame ready;
  const ReadStatus st =
      read_frame(child->fd(), ready, std::chrono::steady_clock::now() + spawn_.startup_timeout);
  if (st != ReadStatus::ok) {
    const std::string how = st == ReadStatus::timeout ? "no ready message in time" : "it ended: ";
    const std::string status = st == ReadStatus::timeout ? "" : child->reap_within(std::chrono::seconds(5));
    throw Error(ErrorDomain::system, 0, fmt::format("worker {} did not start: {}{}", spawn_.argv[0], how, status));
  }
  if (frame_type(ready) != "ready") {
    throw Error(ErrorDomain::system, 0,
                fmt::format("worker {} did not start: {}", spawn_.argv[0], ready.header.value("error", ready.header.dump())));
  }
  ready_ = std::move(ready.header);
  child_ = std::move(child);
  return ready_;
}

eval::Verdict WorkerParent::worker_lost(eval::Rule rule, const std::string& why) {
  eval::Verdict v;
  v.rule = rule;
  v.detail = why;
  child_.reset();  // kills (if still alive) and reaps; the next call starts a fresh worker
  return v;
}

std::variant<Frame, WorkerParent::Lost> WorkerParent::exchange(Frame request, std::uint64_t id,
                                                              const std::string& reply_type,
                                                              std::chrono::milliseconds watchdog) {
  const auto started = std::chrono::steady_clock::now();
  const auto lost = [&](eval::Rule rule, std::string why) {
    child_.reset();  // kills (if still alive) and reaps; the next call starts a fresh worker
    return Lost{rule, std::move(why)};
  };
  try {
    write_frame(child_->fd(), request);
  } catch (const Error& e) {
    const std::string status = child_->reap_within(std::chrono::seconds(1));
    return lost(eval::Rule::crashed, fmt::format("worker died before the request ({}): {}", status, e.what()));
  }
  Frame reply;
  const ReadStatus st = read_frame(child_->fd(), reply, started + watchdog);
  if (st == ReadStatus::timeout) {
    ::kill(child_->pid(), SIGKILL);
    const std::string status = child_->reap();
    return lost(eval::Rule::hang_timeout,
                fmt::format("no answer within {} ms: worker killed ({})", watchdog.count(), status));
  }
  if (st == ReadStatus::eof) {
    const std::string status = child_->reap_within(std::chrono::seconds(5));
    return lost(eval::Rule::crashed, "the worker died during the request: " + status);
  }
  if (frame_type(reply) != reply_type)
    return lost(eval::Rule::internal_error,
                fmt::format("worker answered '{}' to a request for '{}'", frame_type(reply), reply_type));
  if (reply.header.value("id", std::uint64_t{0}) != id)
    return lost(eval::Rule::internal_error, fmt::format("worker answered request {} to request {}",
                                                        reply.header.value("id", std::uint64_t{0}), id));
  return reply;
}

eval::Verdict WorkerParent::evaluate(const eval::EvalRequest& request, std::chrono::milliseconds watchdog) {
  ensure_started();
  const std::uint64_t id = next_id_++;
  auto answered = exchange(evaluate_frame(id, request), id, "verdict", watchdog);
  if (const Lost* l = std::get_if<Lost>(&answered)) return worker_lost(l->rule, l->why);
  VerdictMessage m;
  try {
    m = verdict_from_frame(std::get<Frame>(answered));
  } catch (const Error& e) {
    return worker_lost(eval::Rule::internal_error, std::string("malformed verdict: ") + e.what());
  }
  if (m.fate == WorkerFate::exits) {
    const std::string status = child_->reap_within(std::chrono::seconds(10));
    child_.reset();
    m.verdict.detail += fmt::format(" (worker exited: {})", status);
  }
  return m.verdict;
}

EnumerationResult WorkerParent::enumerate_cublaslt(const EnumerateRequest& request,
                                                   std::chrono::milliseconds watchdog) {
  ensure_started();
  const std::uint64_t id = next_id_++;
  auto answered = exchange(enumerate_frame(id, request), id, "cublaslt_algos", watchdog);
  if (const Lost* l = std::get_if<Lost>(&answered))
    return fmt::format("cuBLASLt enumeration: {}: {}", eval::to_string(l->rule), l->why);
  AlgosMessage m;
  try {
    m = algos_from_frame(std::get<Frame>(answered));
  } catch (const Error& e) {
    child_.reset();
    return std::string("cuBLASLt enumeration: malformed answer: ") + e.what();
  }
  if (m.fate == WorkerFate::exits) {
    const std::string status = child_->reap_within(std::chrono::seconds(10));
    child_.reset();
    if (std::string* error = std::get_if<std::string>(&m.result)) *error += fmt::format(" (worker exited: {})", status);
  }
  return m.result;
}

}  // namespace kd::worker
