#include "store/cache_recovery.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/error.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

constexpr const char* kLockFile = "lock.mdb";

std::string utc_stamp(Clock::time_point t) {
  const std::time_t seconds = Clock::to_time_t(t);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  return fmt::format("{:%Y%m%dT%H%M%SZ}", utc);
}

// Flushes a directory's entries (a rename is durable only then).
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void sync_file(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  KD_SYS_CHECK(fd, file.string());
  const int synced = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (synced != 0) throw_system_error(err, "fsync", file.string(), KD_WHERE);
}

void remove_lock_file(const fs::path& dir) {
  std::error_code ignored;
  fs::remove(dir / kLockFile, ignored);
}

std::string salvage_hint(const fs::path& dir, const fs::path& moved) {
  return fmt::format("`kdctl doctor --cache-dir {} --from {}` salvages its records and jobs into this cache",
                     dir.string(), moved.string());
}

}  // namespace

fs::path backup_file_of(const fs::path& dir) { return dir / "data.mdb.backup"; }

fs::path move_aside(const fs::path& dir, Clock::time_point now) {
  const fs::path file = data_file_of(dir);
  const std::string base = file.string() + ".damaged-" + utc_stamp(now);
  fs::path target = base;
  for (int n = 2; fs::exists(target); ++n) target = fmt::format("{}-{}", base, n);
  if (::rename(file.c_str(), target.c_str()) != 0) {
    throw_system_error(errno, "rename", fmt::format("{} to {}", file.string(), target.string()), KD_WHERE);
  }
  remove_lock_file(dir);
  sync_directory(dir);
  return target;
}

void install_copy(const fs::path& source, const fs::path& dir) {
  const fs::path tmp = data_file_of(dir).string() + ".restore-tmp";
  std::error_code ec;
  fs::copy_file(source, tmp, fs::copy_options::overwrite_existing, ec);
  if (ec) throw_system_error(ec.value(), "copy", fmt::format("{} to {}", source.string(), tmp.string()), KD_WHERE);
  sync_file(tmp);
  if (::rename(tmp.c_str(), data_file_of(dir).c_str()) != 0) {
    throw_system_error(errno, "rename", fmt::format("{} to {}", tmp.string(), data_file_of(dir).string()), KD_WHERE);
  }
  remove_lock_file(dir);
  sync_directory(dir);
}

std::string StartupRepair::message(const fs::path& dir) const {
  switch (outcome) {
    case Outcome::healthy:
      return {};
    case Outcome::restored:
      return fmt::format("{}. It was moved to {}, and the cache was restored from its compact copy {} of {:%F %T} "
                         "UTC (what changed since then is only in the moved file): {}",
                         problem.what, moved_to.string(), backup_file_of(dir).string(),
                         fmt::gmtime(Clock::to_time_t(backup_time)), salvage_hint(dir, moved_to));
    case Outcome::started_empty:
      return fmt::format("{}. It was moved to {}, and kdispatchd starts with an empty cache ({}): {}", problem.what,
                         moved_to.string(), backup_problem, salvage_hint(dir, moved_to));
  }
  return {};
}

StartupRepair repair_at_startup(const fs::path& dir) {
  StartupRepair r;
  CacheCheck check = inspect_cache_dir(dir);
  switch (check.problem) {
    case CacheProblem::no_directory:
    case CacheProblem::no_data_file:
    case CacheProblem::empty:  // LMDB's writer starts a 0-byte file as a new cache: nothing is lost
      return r;
    case CacheProblem::unreadable_directory:
    case CacheProblem::unreadable_data_file:
      throw Error(ErrorDomain::system, 0, check.message());
    case CacheProblem::none:
      check = check_cache_dir(dir, CheckScope::everything);
      if (check.ok()) return r;
      if (!check.damaged()) throw Error(ErrorDomain::data, 0, check.message());
      break;
    default:
      break;
  }
  r.problem = std::move(check);
  r.moved_to = move_aside(dir, Clock::now());
  const fs::path backup = backup_file_of(dir);
  if (!fs::exists(backup)) {
    r.outcome = StartupRepair::Outcome::started_empty;
    r.backup_problem = fmt::format("there is no compact copy {} to restore", backup.string());
    return r;
  }
  const CacheCheck backup_check = check_data_file(backup, CheckScope::everything);
  if (!backup_check.ok()) {
    r.outcome = StartupRepair::Outcome::started_empty;
    r.backup_problem = fmt::format("its compact copy is unusable too: {}", backup_check.what);
    return r;
  }
  install_copy(backup, dir);
  std::error_code ec;
  const auto written = fs::last_write_time(backup, ec);
  if (!ec) r.backup_time = std::chrono::time_point_cast<Clock::duration>(std::chrono::file_clock::to_sys(written));
  r.outcome = StartupRepair::Outcome::restored;
  return r;
}

std::uint64_t last_commit(const lmdb::Env& env) {
  MDB_envinfo info{};
  KD_MDB_CHECK(mdb_env_info(env.get(), &info), env.path().string());
  return info.me_last_txnid;
}

CompactCopy write_compact_copy(const lmdb::Env& env) {
  const fs::path dir = env.path();
  const fs::path backup = backup_file_of(dir);
  const fs::path tmp = backup.string() + ".tmp";
  CompactCopy copy;
  copy.txnid = last_commit(env);
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    KD_SYS_CHECK(fd, tmp.string());
    const int copied = mdb_env_copyfd2(env.get(), fd, MDB_CP_COMPACT);
    const int synced = copied == 0 ? ::fsync(fd) : 0;
    const int err = errno;
    ::close(fd);
    if (copied != 0) {
      fs::remove(tmp);
      throw_lmdb_error(copied, "mdb_env_copyfd2", tmp.string(), KD_WHERE);
    }
    if (synced != 0) {
      fs::remove(tmp);
      throw_system_error(err, "fsync", tmp.string(), KD_WHERE);
    }
  }
  const CacheCheck check = check_data_file(tmp, CheckScope::everything);
  if (!check.ok()) {
    fs::remove(tmp);
    throw Error(ErrorDomain::data, 0, fmt::format("the compact copy failed its check, kept the previous one: {}", check.what));
  }
  if (::rename(tmp.c_str(), backup.c_str()) != 0) {
    throw_system_error(errno, "rename", fmt::format("{} to {}", tmp.string(), backup.string()), KD_WHERE);
  }
  sync_directory(dir);
  copy.bytes = fs::file_size(backup);
  return copy;
}

}  // namespace kd
