// What the daemon does about a damaged cache, and the compact copy it restores from.
//
//   <dir>/data.mdb                   the cache
//   <dir>/data.mdb.backup            the compact copy (mdb_env_copyfd2 with MDB_CP_COMPACT), written
//                                    by the daemon every backup_interval_s and at a clean shutdown
//   <dir>/data.mdb.damaged-<UTC>     a damaged cache moved aside (kdctl doctor --from salvages it)
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "store/cache_check.hpp"
#include "store/lmdb.hpp"

namespace kd {

std::filesystem::path backup_file_of(const std::filesystem::path& dir);

// Renames <dir>/data.mdb to data.mdb.damaged-<UTC time> (with a counter when that name is taken) and
// removes <dir>/lock.mdb: its reader table and last transaction id belong to the old file, and
// LMDB resets them only when the lock file is new (a reader would otherwise pick the new file's
// meta page by the old file's transaction id). Processes that still have the old file open keep
// reading it; CacheReader::refresh() notices the new file. No process of the caller's may have the
// environment open. Returns the new path. Throws kd::Error (system) when the rename fails.
std::filesystem::path move_aside(const std::filesystem::path& dir,
                                 std::chrono::system_clock::time_point now);

// Installs a copy of `source` (a checked data file) as <dir>/data.mdb, through a temporary file that
// is synced and renamed into place; removes lock.mdb as move_aside does. Throws kd::Error (system).
void install_copy(const std::filesystem::path& source, const std::filesystem::path& dir);

struct StartupRepair {
  enum class Outcome {
    healthy,        // data.mdb passed the check, or there is none yet (the writer creates it)
    restored,       // moved aside; the compact copy, checked, is the cache now
    started_empty,  // moved aside; no usable compact copy: the writer starts an empty cache
  };
  Outcome outcome = Outcome::healthy;
  CacheCheck problem;                   // why data.mdb was moved aside
  std::filesystem::path moved_to;       // where it went
  std::string backup_problem;           // why the compact copy was not used (started_empty)
  std::chrono::system_clock::time_point backup_time{};  // when the restored copy was written
  // For the log: the problem, where the file went, what the cache is now, and the fix
  // (kdctl doctor --from). Empty when healthy.
  std::string message(const std::filesystem::path& dir) const;
};

// The daemon's start, before it opens the cache as its writer: checks <dir>/data.mdb with
// CheckScope::everything (through a read transaction, so a concurrent writer such as kdctl import
// cannot make a sound file look damaged); a damaged, truncated, empty... file is moved aside and
// the compact copy, when it passes the check, is installed in its place. Throws kd::Error only when
// the directory or file cannot be read at all (permissions: nothing here can repair that).
// No process of the caller's may have the environment open.
StartupRepair repair_at_startup(const std::filesystem::path& dir);

struct CompactCopy {
  std::uint64_t bytes = 0;
  std::uint64_t txnid = 0;  // the snapshot copied
};

// Writes the compact copy of the snapshot `env` sees now to <dir>/data.mdb.backup: into a
// temporary file that is synced, checked (CheckScope::everything) and renamed over the previous
// copy, which stays when anything fails. The copy reads the live file through LMDB, so `env`'s file
// must have passed the cache check when it was opened (the daemon's does). Throws kd::Error.
CompactCopy write_compact_copy(const lmdb::Env& env);

// The transaction id of the environment's last commit (mdb_env_info): a compact copy is only worth
// writing when it moved.
std::uint64_t last_commit(const lmdb::Env& env);

}  // namespace kd
