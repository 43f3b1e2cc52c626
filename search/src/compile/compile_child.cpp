#include "compile/compile_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::search {
namespace {

using Clock = std::chrono::steady_clock;

// What the child writes: one record, then EOF.
enum class RecordKind : std::uint8_t { output = 1, nvrtc_failure = 2 };

class UniqueFd {
public:
  explicit UniqueFd(int fd = -1) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const noexcept { return fd_; }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_;
};

// A forked child that is killed and reaped on destruction unless reaped already.
class Child {
public:
  explicit Child(pid_t pid) noexcept : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  // Blocks until the child exits; returns its wait status.
  int wait() noexcept {
    int status = 0;
    while (::waitpid(pid_, &status, 0) == -1 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  void kill() noexcept { ::kill(pid_, SIGKILL); }

private:
  pid_t pid_;
};

void append_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void append_string(std::string& out, const std::string& s) {
  append_u64(out, s.size());
  out += s;
}

struct Reader {
  std::string_view bytes;
  std::optional<std::uint64_t> u64() {
    if (bytes.size() < sizeof(std::uint64_t)) return std::nullopt;
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data(), sizeof v);
    bytes.remove_prefix(sizeof v);
    return v;
  }
  std::optional<std::string> string() {
    const auto size = u64();
    if (!size || *size > bytes.size()) return std::nullopt;
    std::string s(bytes.substr(0, *size));
    bytes.remove_prefix(*size);
    return s;
  }
};

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The child: compile, write one record, _exit. Never returns, never throws, never runs atexit
// handlers or destructors of the parent's objects.
[[noreturn]] void child_main(int write_fd, const CompileRequest& request) {
  // Keep only stdin/out/err and the pipe: a child holding another pipe's write end would delay
  // that compile's EOF, and one holding a socket would keep it open.
  if (write_fd != 3 && ::dup2(write_fd, 3) == -1) ::_exit(4);
  ::close_range(4, UINT_MAX, 0);
  std::string record;
  try {
    const CompileOutput out = compile_cuda(request);
    record.push_back(static_cast<char>(RecordKind::output));
    record.push_back(static_cast<char>(out.status));
    append_u64(record, static_cast<std::uint64_t>(out.compile_time.count()));
    append_string(record, out.cubin);
    append_string(record, out.ptx);
    append_string(record, out.log);
  } catch (const std::exception& e) {
    record.assign(1, static_cast<char>(RecordKind::nvrtc_failure));
    append_string(record, e.what());
  } catch (...) {
    ::_exit(5);
  }
  write_all(3, record);
  ::_exit(0);
}

// Parses the child's record into `result` (outcome finished or crashed with the reason).
void parse_record(std::string_view bytes, ChildCompileResult& result) {
  Reader r{bytes};
  if (bytes.empty()) {
    result.failure = "the compiler process wrote no result";
    return;
  }
  const auto kind = static_cast<RecordKind>(bytes.front());
  r.bytes.remove_prefix(1);
  if (kind == RecordKind::nvrtc_failure) {
    result.failure = r.string().value_or("NVRTC failed");
    return;
  }
  if (kind != RecordKind::output || r.bytes.empty()) {
    result.failure = "the compiler process wrote a malformed result";
    return;
  }
  result.output.status = static_cast<CompileStatus>(r.bytes.front());
  r.bytes.remove_prefix(1);
  const auto micros = r.u64();
  auto cubin = r.string();
  auto ptx = r.string();
  auto log = r.string();
  if (!micros || !cubin || !ptx || !log || !r.bytes.empty()) {
    result.failure = "the compiler process wrote a truncated result";
    return;
  }
  result.output.compile_time = std::chrono::microseconds(*micros);
  result.output.cubin = std::move(*cubin);
  result.output.ptx = std::move(*ptx);
  result.output.log = std::move(*log);
  result.outcome = ChildOutcome::finished;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("wait status {:#x}", status);
}

// Serialises pipe creation, fork and the parent's close of the write end, so that no child is
// forked while another compile's write end is open in the parent (close_range in the child is
// the second line of defence).
std::mutex& fork_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

ChildCompileResult compile_in_child(const CompileRequest& request, std::chrono::milliseconds time_limit) {
  const auto start = Clock::now();
  const auto deadline = start + time_limit;
  ChildCompileResult result;

  std::optional<Child> child;
  UniqueFd read_end;
  {
    std::lock_guard lock(fork_mutex());
    int fds[2];
    KD_SYS_CHECK(::pipe2(fds, O_CLOEXEC), request.name);
    read_end = UniqueFd(fds[0]);
    UniqueFd write_end(fds[1]);
    const pid_t pid = ::fork();
    KD_SYS_CHECK(pid, request.name);
    if (pid == 0) child_main(write_end.get(), request);
    child.emplace(pid);
  }

  std::string bytes;
  char buffer[64 * 1024];
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      child->kill();
      child->wait();
      result.outcome = ChildOutcome::timed_out;
      result.failure = fmt::format("compile ran past {} ms and was killed", time_limit.count());
      result.wall_time = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
      return result;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) KD_SYS_CHECK(ready, request.name);
    if (ready <= 0) continue;
    const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    KD_SYS_CHECK(n, request.name);
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }

  const int status = child->wait();
  result.wall_time = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  parse_record(bytes, result);
  if (result.outcome == ChildOutcome::finished && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    result.outcome = ChildOutcome::crashed;
  }
  if (result.outcome == ChildOutcome::crashed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    result.failure = "the compiler process " + describe_wait_status(status) +
                     (result.failure.empty() ? "" : ": " + result.failure);
  }
  return result;
}

void warm_up_nvrtc() {
  const CompileOutput out = compile_cuda(
      {.source = "extern \"C\" __global__ void kd_warm_up() {}\n", .name = "kd_warm_up.cu"});
  if (out.status != CompileStatus::ok) {
    throw Error(ErrorDomain::nvrtc, 0, "NVRTC cannot compile an empty kernel: " + out.log);
  }
}

}  // namespace kd::search
