#include "daemon_process.hpp"

#include <algorithm>
#include <cstdlib>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/text_file.hpp"
#include "support/unix_socket.hpp"

namespace kd::test {
namespace {

pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
            const std::filesystem::path& log) {
  std::vector<char*> argv;
  // From a bundle (tools/dev/make-bundle.sh) the daemon sits in the bundle's bin/, not the build tree.
  std::string exe = KD_DAEMON_EXE;
  if (const char* bundle = std::getenv("KD_BUNDLE_DIR"); bundle != nullptr && *bundle != '\0')
    exe = std::string(bundle) + "/bin/kdispatchd";
  argv.push_back(exe.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

DaemonProcess::DaemonProcess(std::filesystem::path dir, std::vector<std::string> extra_args,
                             std::string toml)
    : dir_(std::move(dir)), socket_(dir_ / "kd.sock"), cache_dir_(dir_ / "cache"),
      port_file_(dir_ / "metrics.port"), log_file_(dir_ / "daemon.log") {
  const auto config = dir_ / "kdispatchd.toml";
  // Tests count one job per distinct n (they predate issue 29's buckets, on by default): buckets
  // are off unless a test sets them.
  const bool sets_buckets = toml.find("buckets") != std::string::npos ||
                            std::find(extra_args.begin(), extra_args.end(), "--buckets") != extra_args.end();
  std::ofstream(config) << (sets_buckets ? "" : "buckets = \"off\"\n") << toml;
  std::filesystem::remove(port_file_);
  std::vector<std::string> args{"--config",       config.string(),     "--cache-dir",
                                cache_dir_.string(), "--socket",        socket_.string(),
                                "--metrics-listen", "127.0.0.1:0",     "--metrics-port-file",
                                port_file_.string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn(args, {}, log_file_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) throw std::runtime_error("kdispatchd exited at startup:\n" + log());
    if (std::filesystem::exists(port_file_) && accepts_connections(socket_)) {
      metrics_port_ = static_cast<std::uint16_t>(std::stoul(read_text(port_file_)));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("kdispatchd did not start within 20 s:\n" + log());
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool DaemonProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

int DaemonProcess::stop(int signo, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::runtime_error("daemon not running");
  ::kill(pid_, signo);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  throw std::runtime_error("kdispatchd did not exit after signal " + std::to_string(signo) +
                           ":\n" + log());
}

std::string DaemonProcess::log() const { return read_text(log_file_); }

Finished run_daemon_command(const std::vector<std::string>& args,
                            const std::vector<std::string>& env) {
  char tmpl[] = "/tmp/kd-daemon-cmd-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  const pid_t pid = spawn(args, env, tmpl);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Finished f;
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  f.output = read_text(tmpl);
  std::filesystem::remove(tmpl);
  return f;
}

std::string http_get(std::uint16_t port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to the metrics port");
  }
  const std::string request = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const auto header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos || response.rfind("HTTP/1.0 200", 0) != 0)
    throw std::runtime_error("bad HTTP response: " + response.substr(0, 200));
  return response.substr(header_end + 4);
}

std::string test_key(int n) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 "
         "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) {
      stime = std::stoull(f);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace kd::test
