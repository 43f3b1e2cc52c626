#include "support/commit_in_child.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include "store/cache_store.hpp"

namespace kd::test {

int commit_in_child(const std::filesystem::path& cache, const std::vector<Record>& records) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      CacheWriter w(cache);
      for (const Record& r : records) w.commit_record(r);
      ::_exit(0);
    } catch (...) {
      ::_exit(3);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace kd::test
