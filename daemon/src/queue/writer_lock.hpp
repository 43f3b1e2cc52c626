// The cache directory's writer lock: flock on <cache_dir>/kdispatchd.lock, held by the running
// kdispatchd (daemon.cpp) for its lifetime and taken by a tool that opens the job queue without a
// daemon (kdctl purge), so the queue never has two writers. The kernel drops the lock with its
// process, so kill -9 leaves nothing stale.
#pragma once

#include <filesystem>
#include <optional>

namespace kd::daemon {

class WriterLock {
public:
  // Takes the lock without waiting; nullopt when another process holds it (a daemon runs).
  // Throws kd::Error (system) when the lock file cannot be created or opened.
  static std::optional<WriterLock> try_acquire(const std::filesystem::path& cache_dir);
  ~WriterLock();
  WriterLock(WriterLock&& other) noexcept;
  WriterLock& operator=(WriterLock&&) = delete;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

private:
  explicit WriterLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kd::daemon
