#include "miss_recorder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_set>

#include "shim_config.hpp"

namespace kd::shim {
namespace {

class MissRecorder {
public:
  void record(std::string_view line) {
    const std::lock_guard lock(mutex_);
    if (state_ == State::unopened) open();
    if (state_ != State::open) return;
    if (!seen_.emplace(line).second) return;
    std::string text(line);
    text += '\n';
    if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      fail("write");
    }
  }

private:
  enum class State : unsigned char { unopened, open, failed };

  void open() {
    const std::string& path = shim_config().record_path;
    if (path.empty()) {
      state_ = State::failed;
      return;
    }
    {
      std::ifstream existing(path);
      for (std::string l; std::getline(existing, l);) seen_.insert(l);
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      fail("open");
      return;
    }
    state_ = State::open;
  }

  void fail(const char* what) {
    std::fprintf(stderr, "kdispatch_cublas: KD_RECORD=%s: %s failed: %s; not recording\n",
                 shim_config().record_path.c_str(), what, std::strerror(errno));
    state_ = State::failed;
  }

  std::mutex mutex_;
  State state_ = State::unopened;
  int fd_ = -1;  // kept open for the life of the process
  std::unordered_set<std::string> seen_;
};

}  // namespace

void record_miss(const kd_gemm_desc& desc) noexcept {
  if (shim_config().record_path.empty()) return;
  char line[KD_KEY_LINE_BYTES];
  if (kd_gemm_desc_key_line(&desc, line, sizeof line) != KD_SUCCESS) return;  // not a keyed call
  try {
    // Never destroyed: misses may be recorded from other threads while the process exits.
    static MissRecorder* const recorder = new MissRecorder;
    recorder->record(line);
  } catch (...) {
    // Out of memory while recording: the call itself is still forwarded.
  }
}

}  // namespace kd::shim
