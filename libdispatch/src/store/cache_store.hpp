// The kernel cache: one LMDB environment per cache directory with named databases
//   records  full key line -> serialized Record (record.hpp)
//   trees    search id     -> search tree (JSON, owned by search/)
//   jobs     job queue entries (owned by daemon/)
//   meta     "schema" -> decimal schema version, "generation" -> decimal counter
// Applications only read (CacheReader); the daemon is the only writer (CacheWriter).
//
// One LMDB environment per directory per process: LMDB forbids opening the same environment twice
// in one process (closing either copy drops the other's POSIX locks). So a CacheReader and a
// CacheWriter must never be open on the same directory in the same process at the same time, nor
// two CacheReaders; a process that writes reads through its CacheWriter. Tests use child processes.
// After fork(), a child must not use an environment its parent opened; it opens its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "store/lmdb.hpp"
#include "key/gemm_key.hpp"
#include "store/record.hpp"

namespace kd {

inline constexpr std::uint32_t kCacheSchemaVersion = 1;

// KD_CACHE_DIR, else $XDG_CACHE_HOME/kdispatch, else ~/.cache/kdispatch. Empty variables and a
// relative XDG_CACHE_HOME (the XDG spec says to ignore it) are skipped; with no HOME the passwd
// entry's home is used, and failing that /tmp/kdispatch-<uid>.
std::filesystem::path default_cache_dir();

// Why a lookup did not produce a usable record. Each is counted by the caller.
enum class LookupMiss : std::uint8_t {
  not_found,          // no record for this key
  corrupted,          // checksum, magic or payload damage
  schema_mismatch,    // record or cache schema from another kdispatch version
  foreign_device,     // record's key names another GPU than the one asked about; the store looks
                      // up exact lines and never answers this (callers comparing device parts do)
  foreign_versions,   // made with another cuBLAS/driver major than this process has
  cache_unavailable,  // no cache directory, unreadable, or LMDB error
};
std::string_view to_string(LookupMiss m);

// Why `r` cannot serve `key`, its parsed key line, as stored (issue 29), or nullopt. A range line
// is served by a compiled kernel whose plan's rules give every n of it its grid
// (range_plan_problem), or by a vendor verdict (nothing to launch); only a range's plan has rules.
// The cache reader refuses such a record as corrupted; `kdctl import` refuses to publish it.
std::optional<std::string> range_problem(const Record& r, const GemmKey& key);

// What this process runs with; records from other majors are foreign. Majors are
// driver_version / 1000 (cuDriverGetVersion: 13000 is 13.0) and cublas_version / 10000
// (cublasGetVersion: 130100 is 13.1.0).
struct RuntimeVersions {
  int driver_version = 0;  // 0 = do not check
  int cublas_version = 0;  // 0 = do not check
};

// Read-only access for application processes. Opens without creating anything; a missing or
// unreadable directory is not an error at construction: every lookup then answers
// cache_unavailable. Two read transactions (two reader slots) are kept and reset/renewed in turn
// (refresh()), so lookups cost no reader-slot registration. Not thread-safe: one reader per
// thread, or external locking.
// A cache whose meta schema is not kCacheSchemaVersion is not available() either; its lookups
// answer schema_mismatch. A cache that fails the cache check (cache_check.hpp: truncated, not LMDB,
// a broken tree) is never read: it is not available() and its lookups answer corrupted; every
// snapshot is checked before it is read, and refresh() reopens the directory's data.mdb when it
// was replaced (a daemon moving a damaged file aside). A directory the process cannot write (no lock file can be created or
// opened for writing) is opened with MDB_NOLOCK as a fallback: see lmdb::LockMode::no_lock for
// the caveat (a concurrent writer can make snapshots read damaged records, answered as corrupted).
// A moved-from reader (or writer) may only be destroyed or assigned to.
class CacheReader {
public:
  explicit CacheReader(std::filesystem::path dir, RuntimeVersions versions = {});
  ~CacheReader();
  CacheReader(CacheReader&&) noexcept;
  CacheReader& operator=(CacheReader&&) noexcept;

  bool available() const noexcept;
  // Why not available (empty when available).
  const std::string& unavailable_reason() const noexcept;

  // Takes a fresh snapshot (mdb_txn_renew of the spare transaction); retries opening a cache that
  // was unavailable. Generations never go back: a fresh snapshot older than the current one is
  // dropped (see take_snapshot in the source). Returns the generation counter of the snapshot now
  // read (0 when unavailable).
  std::uint64_t refresh() noexcept;
  std::uint64_t generation() const noexcept;

  // Looks up a full key line (with device part) in the current snapshot. Never throws.
  // A record stored under another line than its own key_line is corrupted; a record schema other
  // than kRecordSchemaVersion is schema_mismatch; versions as RuntimeVersions says.
  // A record of a range of n (issue 29) is corrupted unless its key line parses as that range and
  // its plan's rules serve the whole range (plan/launch_plan.hpp, range_plan_problem); an exact
  // record whose plan carries rules is corrupted too.
  std::variant<Record, LookupMiss> lookup(std::string_view full_key_line) const noexcept;
  // What serves an exact call: the record of `full_key_line` itself when there is one (any answer
  // but not_found is returned as is), else the record of a range that covers the line's n and
  // equals it in every other token (the narrowest such range; on a tie the one with the lower
  // start). The range records are found by walking the keys that share the line's text before
  // `n=` (store order), so the cost grows with the records of one (types, transposes, m) and is
  // paid on the background thread only. A range record that fails the checks of lookup() is
  // corrupted (not skipped: it is counted). Never throws.
  std::variant<Record, LookupMiss> lookup_covering(std::string_view full_key_line) const noexcept;
  // Every record's key line in the snapshot (for ls/export); corrupted ones are skipped.
  std::vector<std::string> list_keys() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The single writer (the daemon, kdctl import/evict run through it or with the daemon stopped).
// Creates the directory and databases; writes the schema version on first open and refuses (throws
// kd::Error) a cache of another schema. Clears stale reader slots of dead processes on open.
// Opens only a cache that passes the cache check (cache_check.hpp, CheckScope::everything): a
// damaged data.mdb throws kd::Error (domain data) whose message names the damage and the fix.
// Not thread-safe. Every write is one transaction; a write that does not fit the map throws
// kd::Error (domain lmdb, code MDB_MAP_FULL) saying the cache is full. Keys longer than LMDB's
// maximum key size (511 bytes) throw kd::Error on writing and are not_found on lookup.
class CacheWriter {
public:
  explicit CacheWriter(std::filesystem::path dir);
  CacheWriter(std::filesystem::path dir, const lmdb::EnvOptions& options);
  ~CacheWriter();
  CacheWriter(CacheWriter&&) noexcept;
  CacheWriter& operator=(CacheWriter&&) noexcept;

  // Stores (replaces) a record under r.key_line and bumps the generation, in one transaction.
  // Returns the new generation. (Subscribers learn of it from whoever serves the cache: the
  // daemon's `published` notice, or its generation polling.)
  std::uint64_t commit_record(const Record& r);
  // Removes a record and bumps the generation; false when absent.
  bool evict(std::string_view full_key_line);
  // Runs `body` in one write transaction and commits. When `body` returns true (it changed
  // records: the daemon's batched eviction), the generation is bumped in the same transaction and
  // the new generation returned; otherwise nullopt. `body` opens the databases it uses
  // (lmdb::open_db). Throws what `body` throws, or kd::Error as commit_record does (the transaction is
  // then aborted: nothing of it is written).
  std::optional<std::uint64_t> write_records(const std::function<bool(const lmdb::Txn&)>& body);
  std::uint64_t generation() const;

  // Raw access to a named database ("trees", "jobs", ...) for the search and the daemon. put_raw
  // creates a database it does not find; get_raw/scan_raw/del_raw treat a missing one as empty.
  void put_raw(const char* db, std::string_view key, std::string_view value);
  std::optional<std::string> get_raw(const char* db, std::string_view key) const;
  bool del_raw(const char* db, std::string_view key);
  // All (key, value) pairs of a database in key order.
  std::vector<std::pair<std::string, std::string>> scan_raw(const char* db) const;
  // Stores many pairs in one transaction (kdctl doctor's salvage); the generation is not bumped.
  void put_raw_many(const char* db, const std::vector<std::pair<std::string, std::string>>& entries);
  // Bumps the generation alone, so running clients look again (after put_raw_many of records).
  std::uint64_t bump_generation();

  lmdb::Env& env() noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kd
