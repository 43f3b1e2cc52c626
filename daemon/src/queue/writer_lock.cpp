#include "queue/writer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <utility>

#include "common/error.hpp"

namespace kd::daemon {

std::optional<WriterLock> WriterLock::try_acquire(const std::filesystem::path& cache_dir) {
  const auto path = cache_dir / "kdispatchd.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  KD_SYS_CHECK(fd, path.string());
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return WriterLock(fd);
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);
}

WriterLock::WriterLock(WriterLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

}  // namespace kd::daemon
