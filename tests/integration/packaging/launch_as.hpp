// Starts a program under another identity the way systemd starts a service's ExecStart= line for
// User=/Group=/UMask=: supplementary groups from the group database (as initgroups does), then the
// group, then the user, the umask, the working directory and exactly the given environment. Its
// stdout and stderr go to one file. Needs root (setgroups/setresuid); the sandboxing settings of a
// unit (ProtectSystem=, DeviceAllow=, ...) are not reproduced.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kd::test {

struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

// User= and Group= as systemd resolves them: the user's uid, the named group's gid (the user's
// primary group when `group` is empty) and the user's groups from the group database. Throws
// std::runtime_error naming the user or group that does not exist.
Credentials credentials_of(const std::string& user, const std::string& group = "");

struct Launch {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::vector<std::string> env;   // "NAME=value", the whole environment
  Credentials credentials;
  mode_t umask = 022;
  std::filesystem::path cwd = "/";
  std::filesystem::path output;  // receives stdout and stderr (created, truncated)
};

// Forks and execs; returns the child's pid. A child that cannot take the identity or exec writes
// why to `output` and exits 127.
pid_t spawn(const Launch& launch);

// Waits up to `timeout` for `pid` (SIGKILL after it); returns the exit code, 128 + signal.
int wait_for(pid_t pid, std::chrono::milliseconds timeout);

struct Finished {
  int exit_code = -1;
  std::string output;
};
// spawn + wait_for (30 s) + the output file's text.
Finished run(const Launch& launch);

}  // namespace kd::test
