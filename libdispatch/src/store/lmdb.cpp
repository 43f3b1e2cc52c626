#include "store/lmdb.hpp"

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

}  // namespace kd::lmdb
