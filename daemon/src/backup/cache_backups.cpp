#include "backup/cache_backups.hpp"

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "store/cache_check.hpp"
#include "store/cache_recovery.hpp"

namespace kd::daemon {

CacheBackups::CacheBackups(const lmdb::Env& env, std::chrono::seconds interval)
    : env_(env), interval_(interval) {
  if (interval_.count() > 0) thread_ = std::thread([this] { run(); });
}

CacheBackups::~CacheBackups() { stop_thread(); }

void CacheBackups::stop_thread() {
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CacheBackups::finish() {
  stop_thread();
  if (interval_.count() > 0) copy_if_changed("at shutdown");
}

void CacheBackups::run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    copy_if_changed("periodic");
    lock.lock();
  }
}

void CacheBackups::copy_if_changed(const char* when) {
  try {
    if (last_commit(env_) == copied_txnid_) return;
    const auto start = std::chrono::steady_clock::now();
    // The copy reads the live file through LMDB: check it first, so that a file damaged while the
    // daemon runs (truncated or overwritten by something else) is reported instead of faulting the
    // copy, and never replaces a good copy.
    {
      lmdb::Txn snapshot(env_, lmdb::Access::read_only);
      const CacheCheck check = check_open_snapshot(env_, snapshot, CheckScope::everything);
      if (!check.ok()) {
        const auto backup = backup_file_of(env_.path());
        spdlog::error("{} while kdispatchd runs, so it is not copied to {}. Restart kdispatchd: at start it moves the "
                      "damaged file aside and {}",
                      check.what, backup.string(),
                      std::filesystem::exists(backup) ? "restores the compact copy" : "starts an empty cache");
        return;
      }
    }
    const CompactCopy copy = write_compact_copy(env_);
    copied_txnid_ = copy.txnid;
    spdlog::info("compact copy of the cache ({}): {} ({} bytes, {} ms)", when, backup_file_of(env_.path()).string(),
                 copy.bytes,
                 std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  } catch (const Error& e) {
    spdlog::warn("compact copy of the cache ({}) failed, the previous copy is kept: {}", when, e.what());
    spdlog::debug("compact copy failure detail: {}", e.detail());
  } catch (const std::exception& e) {
    spdlog::warn("compact copy of the cache ({}) failed, the previous copy is kept: {}", when, e.what());
  }
}

}  // namespace kd::daemon
