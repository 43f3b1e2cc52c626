#include "launch_as.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kd::test {
namespace {

// Async-signal-safe: the child of a multi-threaded parent may only make system calls.
[[noreturn]] void child_fail(const char* what) {
  const char* why = std::strerror(errno);
  (void)!::write(2, what, std::strlen(what));
  (void)!::write(2, ": ", 2);
  (void)!::write(2, why, std::strlen(why));
  (void)!::write(2, "\n", 1);
  ::_exit(127);
}

}  // namespace

Credentials credentials_of(const std::string& user, const std::string& group) {
  const passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) throw std::runtime_error("no user named " + user);
  Credentials c{pw->pw_uid, pw->pw_gid, {}};
  if (!group.empty()) {
    const struct group* gr = ::getgrnam(group.c_str());
    if (gr == nullptr) throw std::runtime_error("no group named " + group);
    c.gid = gr->gr_gid;
  }
  int n = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  if (::getgrouplist(user.c_str(), c.gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<std::size_t>(n));
    ::getgrouplist(user.c_str(), c.gid, groups.data(), &n);
  }
  groups.resize(static_cast<std::size_t>(n));
  c.groups = std::move(groups);
  return c;
}

pid_t spawn(const Launch& launch) {
  std::vector<char*> argv, envp;
  std::vector<std::string> args = launch.argv, env = launch.env;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int out = ::open(launch.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw std::runtime_error("cannot create " + launch.output.string());
  const Credentials& c = launch.credentials;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
    if (::setgroups(c.groups.size(), c.groups.data()) != 0) child_fail("setgroups");
    if (::setresgid(c.gid, c.gid, c.gid) != 0) child_fail("setresgid");
    if (::setresuid(c.uid, c.uid, c.uid) != 0) child_fail("setresuid");
    ::umask(launch.umask);
    if (::chdir(launch.cwd.c_str()) != 0) child_fail("chdir");
    ::execve(argv[0], argv.data(), envp.data());
    child_fail(argv[0]);
  }
  ::close(out);
  return pid;
}

int wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Finished run(const Launch& launch) {
  const pid_t pid = spawn(launch);
  Finished f;
  f.exit_code = wait_for(pid, std::chrono::seconds(30));
  std::ifstream in(launch.output);
  std::stringstream text;
  text << in.rdbuf();
  f.output = text.str();
  return f;
}

}  // namespace kd::test
