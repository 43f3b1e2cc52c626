#include "store/lmdb.hpp"

#include <cerrno>
#include <cstdio>

#include "common/error.hpp"

namespace kd::lmdb {

Env::Env(const std::filesystem::path& dir, Access access, const EnvOptions& options)
    : path_(dir), access_(access) {
  const std::string where = dir.string();
  MDB_env* raw = nullptr;
  KD_MDB_CHECK(mdb_env_create(&raw), where);
  env_.reset(raw);
  KD_MDB_CHECK(mdb_env_set_maxdbs(raw, options.max_dbs), where);
  KD_MDB_CHECK(mdb_env_set_maxreaders(raw, options.max_readers), where);
  KD_MDB_CHECK(mdb_env_set_mapsize(raw, options.map_size_bytes), where);
  // MDB_NOTLS: read transactions are owned by objects, not threads, so a reader slot can be reset
  // and renewed from whichever thread holds the object.
  unsigned flags = MDB_NOTLS;
  if (access == Access::read_only) {
    flags |= MDB_RDONLY;
    if (options.lock == LockMode::no_lock) flags |= MDB_NOLOCK;
  } else {
    std::filesystem::create_directories(dir);
  }
  KD_MDB_CHECK(mdb_env_open(raw, where.c_str(), flags, 0644), where);
}

int Env::clear_stale_readers() {
  int dead = 0;
  KD_MDB_CHECK(mdb_reader_check(env_.get(), &dead), path_.string());
  return dead;
}

std::vector<pid_t> Env::reader_pids() const {
  // mdb_reader_list prints a header line, then one "pid thread txnid" line per slot.
  std::vector<pid_t> pids;
  const auto collect = [](const char* line, void* ctx) -> int {
    long pid = 0;
    if (std::sscanf(line, "%ld", &pid) == 1) static_cast<std::vector<pid_t>*>(ctx)->push_back(static_cast<pid_t>(pid));
    return 0;
  };
  if (mdb_reader_list(env_.get(), collect, &pids) < 0) {
    throw_lmdb_error(EINVAL, "mdb_reader_list", path_.string(), KD_WHERE);
  }
  return pids;
}

Txn::Txn(const Env& env, Access access) : path_(env.path().string()) {
  MDB_txn* raw = nullptr;
  const unsigned flags = access == Access::read_only ? MDB_RDONLY : 0;
  KD_MDB_CHECK(mdb_txn_begin(env.get(), nullptr, flags, &raw), path_);
  txn_.reset(raw);
}

void Txn::commit() {
  MDB_txn* raw = txn_.release();
  KD_MDB_CHECK(mdb_txn_commit(raw), path_);
}

void Txn::reset() noexcept {
  if (txn_) mdb_txn_reset(txn_.get());
}

void Txn::renew() { KD_MDB_CHECK(mdb_txn_renew(txn_.get()), path_); }

std::optional<MDB_dbi> open_db(const Txn& txn, const char* name, bool create) {
  MDB_dbi dbi = 0;
  const int rc = mdb_dbi_open(txn.get(), name, create ? MDB_CREATE : 0, &dbi);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  KD_MDB_CHECK(rc, name);
  return dbi;
}

std::optional<std::string_view> get(const Txn& txn, MDB_dbi dbi, std::string_view key) {
  MDB_val k = as_val(key);
  MDB_val v{};
  const int found = mdb_get(txn.get(), dbi, &k, &v);
  if (found == MDB_NOTFOUND) return std::nullopt;
  KD_MDB_CHECK(found, std::string(key));
  return as_view(v);
}

void put(const Txn& txn, MDB_dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = as_val(key);
  MDB_val v = as_val(value);
  KD_MDB_CHECK(mdb_put(txn.get(), dbi, &k, &v, 0), std::string(key));
}

bool del(const Txn& txn, MDB_dbi dbi, std::string_view key) {
  MDB_val k = as_val(key);
  const int deleted = mdb_del(txn.get(), dbi, &k, nullptr);
  if (deleted == MDB_NOTFOUND) return false;
  KD_MDB_CHECK(deleted, std::string(key));
  return true;
}

void for_each(const Txn& txn, MDB_dbi dbi,
              const std::function<void(std::string_view key, std::string_view value)>& visit) {
  MDB_cursor* raw = nullptr;
  KD_MDB_CHECK(mdb_cursor_open(txn.get(), dbi, &raw), "cursor");
  const std::unique_ptr<MDB_cursor, CursorDeleter> cursor(raw);
  MDB_val k{};
  MDB_val v{};
  int rc = mdb_cursor_get(raw, &k, &v, MDB_FIRST);
  for (; rc == 0; rc = mdb_cursor_get(raw, &k, &v, MDB_NEXT)) visit(as_view(k), as_view(v));
  if (rc != MDB_NOTFOUND) KD_MDB_CHECK(rc, "cursor");
}

void for_each_key_with_prefix(const Txn& txn, MDB_dbi dbi, std::string_view prefix,
                              const std::function<void(std::string_view key)>& visit) {
  if (prefix.empty()) return;  // MDB_SET_RANGE takes no empty key; no caller needs every key here
  MDB_cursor* raw = nullptr;
  KD_MDB_CHECK(mdb_cursor_open(txn.get(), dbi, &raw), "cursor");
  const std::unique_ptr<MDB_cursor, CursorDeleter> cursor(raw);
  MDB_val k = as_val(prefix);
  MDB_val v{};
  int rc = mdb_cursor_get(raw, &k, &v, MDB_SET_RANGE);
  for (; rc == 0; rc = mdb_cursor_get(raw, &k, &v, MDB_NEXT)) {
    const std::string_view key = as_view(k);
    if (!key.starts_with(prefix)) return;
    visit(key);
  }
  if (rc != MDB_NOTFOUND) KD_MDB_CHECK(rc, "cursor");
}

}  // namespace kd::lmdb
