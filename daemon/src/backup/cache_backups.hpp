// The daemon's compact copies of its cache (store/cache_recovery.hpp: <cache_dir>/data.mdb.backup),
// which it restores from when it finds data.mdb damaged at its next start.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "store/lmdb.hpp"

namespace kd::daemon {

// Writes a compact copy every `interval` on a thread of its own (copying a large cache takes
// seconds, which must hold up neither the io thread nor the queue's writer), skipping intervals
// without a commit since the last copy. An interval of zero writes no copies at all. Each copy is
// preceded by the cache check of the live file: a file damaged while the daemon runs is reported
// (error level, with the fix: restart kdispatchd) and not copied. A failed copy is logged (warn) and
// the previous copy kept. `env` must outlive this object.
class CacheBackups {
public:
  CacheBackups(const lmdb::Env& env, std::chrono::seconds interval);
  // Stops the thread; writes no final copy (see finish()).
  ~CacheBackups();
  CacheBackups(const CacheBackups&) = delete;
  CacheBackups& operator=(const CacheBackups&) = delete;

  // At a clean shutdown, after the last commit: stops the thread and writes a final copy when
  // anything was committed since the last one.
  void finish();

private:
  void run();
  void stop_thread();
  void copy_if_changed(const char* when);

  const lmdb::Env& env_;
  std::chrono::seconds interval_;
  std::uint64_t copied_txnid_ = 0;  // the last commit the current copy holds (0: none yet)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kd::daemon
