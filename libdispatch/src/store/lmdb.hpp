// RAII handles over LMDB. Environments, transactions and cursors each own their handle through a
// unique_ptr with a deleter, so moves are free of bugs. Errors throw kd::Error (KD_MDB_CHECK) with
// the call and the path or database name.
#pragma once

#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace kd::lmdb {

enum class Access { read_only, read_write };

struct EnvDeleter {
  void operator()(MDB_env* env) const noexcept { mdb_env_close(env); }
};
struct TxnDeleter {
  void operator()(MDB_txn* txn) const noexcept { mdb_txn_abort(txn); }
};
struct CursorDeleter {
  void operator()(MDB_cursor* cur) const noexcept { mdb_cursor_close(cur); }
};

// How readers coordinate with the writer. `shared_lock_file` is LMDB's normal mode (lock.mdb holds
// the reader table). `no_lock` (MDB_NOLOCK, read-only environments only) is the fallback for a
// cache in a directory the process cannot write: no reader table, so a concurrent writer may
// reuse pages a snapshot still reads. Records are checksummed, so such damage reads as corrupted,
// never as a wrong kernel; a read-only cache normally has no writer at all.
enum class LockMode { shared_lock_file, no_lock };

struct EnvOptions {
  std::size_t map_size_bytes = std::size_t{1} << 34;  // 16 GiB of address space, not disk
  unsigned max_dbs = 16;
  unsigned max_readers = 1022;
  LockMode lock = LockMode::shared_lock_file;
};

class Env {
public:
  // Opens (creating when read_write) the environment in directory `dir`. Read-only environments
  // never create files and fail when the directory holds no cache.
  Env(const std::filesystem::path& dir, Access access, const EnvOptions& options = {});

  MDB_env* get() const noexcept { return env_.get(); }
  const std::filesystem::path& path() const noexcept { return path_; }
  Access access() const noexcept { return access_; }
  // Clears reader-table slots left by dead processes; returns how many were cleared.
  int clear_stale_readers();
  // Process ids holding reader-table slots (mdb_reader_list), live or stale; empty in no_lock mode.
  std::vector<pid_t> reader_pids() const;

private:
  std::unique_ptr<MDB_env, EnvDeleter> env_;
  std::filesystem::path path_;
  Access access_;
};

class Txn {
public:
  Txn(const Env& env, Access access);
  MDB_txn* get() const noexcept { return txn_.get(); }
  // The transaction's id (mdb_txn_id). A read-only transaction's id is the snapshot its reader slot
  // pins: the writer's last commit when it began; it reads the meta page of that id's parity.
  std::uint64_t id() const noexcept { return mdb_txn_id(txn_.get()); }
  // Commits; the transaction is finished afterwards (destruction then does nothing).
  void commit();
  // Read-only transactions only: release the snapshot but keep the reader slot (mdb_txn_reset),
  // then take a fresh snapshot (mdb_txn_renew).
  void reset() noexcept;
  void renew();

private:
  std::unique_ptr<MDB_txn, TxnDeleter> txn_;
  std::string path_;
};

// Opens named database `name`; creates it when the transaction is read-write and `create` is set.
// Returns nullopt when it does not exist and cannot be created.
std::optional<MDB_dbi> open_db(const Txn& txn, const char* name, bool create);

// Byte views of an MDB_val; valid until the transaction ends or a write touches the page.
inline std::string_view as_view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}
inline MDB_val as_val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

// Point operations. get returns a view valid for the transaction's lifetime, nullopt on a miss.
std::optional<std::string_view> get(const Txn& txn, MDB_dbi dbi, std::string_view key);
void put(const Txn& txn, MDB_dbi dbi, std::string_view key, std::string_view value);
// Returns false when the key was absent.
bool del(const Txn& txn, MDB_dbi dbi, std::string_view key);
// Calls visit(key, value) for every entry in key order; the views are valid during the call only.
void for_each(const Txn& txn, MDB_dbi dbi,
              const std::function<void(std::string_view key, std::string_view value)>& visit);
// Calls visit(key) for every key that starts with `prefix`, in key order (a cursor positioned at
// the prefix, so keys before it are never read); the view is valid for the transaction's lifetime.
void for_each_key_with_prefix(const Txn& txn, MDB_dbi dbi, std::string_view prefix,
                              const std::function<void(std::string_view key)>& visit);

}  // namespace kd::lmdb
