#include "kdctl_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace kd::test {

KdctlRun run_kdctl(const std::filesystem::path& scratch, const std::vector<std::string>& args,
                   const std::vector<std::string>& env) {
  const std::string out_file = (scratch / "kdctl.stdout").string();
  const std::string err_file = (scratch / "kdctl.stderr").string();
  // From a bundle (tools/dev/make-bundle.sh) kdctl sits in the bundle's bin/, not the build tree.
  std::string exe = KD_KDCTL_PATH;
  if (const char* bundle = std::getenv("KD_BUNDLE_DIR"); bundle != nullptr && *bundle != '\0')
    exe = std::string(bundle) + "/bin/kdctl";
  std::vector<std::string> argv_text{exe};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& mine : env) overridden = overridden || mine.substr(0, mine.find('=')) == name;
    if (!overridden) env_text.push_back(entry);
  }
  env_text.insert(env_text.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("posix_spawn failed for " + exe);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  KdctlRun run;
  run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_text(out_file);
  run.err = read_text(err_file);
  return run;
}

}  // namespace kd::test
