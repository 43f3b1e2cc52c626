#include "cache_snapshot.hpp"

#include <cerrno>

#include <fmt/format.h>

#include "common/error.hpp"
#include "store/cache_check.hpp"
#include "store/cache_store.hpp"
#include "store/lmdb.hpp"

namespace kd::kdctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRecordsDb = "records";
constexpr const char* kMetaDb = "meta";

bool is_permission_error(const Error& e) {
  return e.domain() == ErrorDomain::lmdb &&
         (e.code() == EACCES || e.code() == EPERM || e.code() == EROFS);
}

lmdb::Env open_read_only(const fs::path& dir) {
  try {
    return lmdb::Env(dir, lmdb::Access::read_only);
  } catch (const Error& e) {
    if (!is_permission_error(e)) throw;
    lmdb::EnvOptions no_lock;
    no_lock.lock = lmdb::LockMode::no_lock;
    return lmdb::Env(dir, lmdb::Access::read_only, no_lock);
  }
}

}  // namespace

fs::path resolve_cache_dir(const std::string& flag) {
  return flag.empty() ? default_cache_dir() : fs::path(flag);
}

void require_cache(const fs::path& dir) {
  const CacheCheck inspected = inspect_cache_dir(dir);
  if (inspected.ok()) return;
  const bool absent = inspected.problem == CacheProblem::no_directory || inspected.problem == CacheProblem::no_data_file;
  throw Error(absent ? ErrorDomain::usage : ErrorDomain::data, 0, inspected.message());
}

std::optional<KeyParts> split_key(std::string_view full_key_line) {
  auto parsed = parse_key(full_key_line);
  auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr || !key->device) return std::nullopt;
  const auto blank = full_key_line.find(' ');
  return KeyParts{std::move(*key), std::string(full_key_line.substr(0, blank))};
}

std::optional<OpKeyParts> split_op_key(std::string_view full_key_line) {
  auto parsed = parse_op_key(full_key_line);
  auto* key = std::get_if<OpKey>(&parsed);
  if (key == nullptr) return std::nullopt;
  const auto* row = std::get_if<RowKey>(key);
  const auto* gemm = std::get_if<GemmKey>(key);
  const std::optional<DevicePart>& device = row ? row->device : gemm->device;
  if (!device) return std::nullopt;
  OpKeyParts parts{*key, std::string(full_key_line.substr(0, full_key_line.find(' '))), op_shape_line(*key), *device,
                   row ? row->dtype : gemm->a};
  return parts;
}

struct CacheSnapshot::Impl {
  fs::path dir;
  lmdb::Env env;
  lmdb::Txn txn;  // one snapshot for the life of the command; declared after env
  // The environment is opened only after require_cache's stage one of the cache check, and the
  // snapshot read only after stage two passed on it (cache_check.hpp).
  explicit Impl(const fs::path& d) : dir(d), env(open_read_only(d)), txn(env, lmdb::Access::read_only) {
    const CacheCheck check = check_open_snapshot(env, txn, CheckScope::everything);
    if (!check.ok()) throw Error(ErrorDomain::data, 0, check.message());
  }

  // Handles opened in this read transaction are valid for as long as it lives.
  std::optional<MDB_dbi> db(const char* name) const { return lmdb::open_db(txn, name, false); }
};

CacheSnapshot::CacheSnapshot(const fs::path& dir) {
  require_cache(dir);
  impl_ = std::make_unique<Impl>(dir);
  const auto meta = impl_->db(kMetaDb);
  const auto schema = meta ? lmdb::get(impl_->txn, *meta, "schema") : std::nullopt;
  if (!schema) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("{} holds an LMDB environment but no kdispatch cache (no schema)",
                            dir.string()));
  }
  if (*schema != std::to_string(kCacheSchemaVersion)) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("cache at {} has schema \"{}\"; this kdctl reads schema {}", dir.string(),
                            *schema, kCacheSchemaVersion));
  }
}

CacheSnapshot::~CacheSnapshot() = default;

const fs::path& CacheSnapshot::dir() const noexcept { return impl_->dir; }

std::vector<StoredRecord> CacheSnapshot::records() const {
  std::vector<StoredRecord> out;
  for_each_raw(kRecordsDb, [&](std::string_view key, std::string_view value) {
    StoredRecord s{std::string(key), value.size(), deserialize_record(value)};
    if (const auto* r = std::get_if<Record>(&s.record); r != nullptr && r->key_line != key) {
      s.record = RecordError::malformed_payload;
    }
    out.push_back(std::move(s));
  });
  return out;
}

std::optional<std::string> CacheSnapshot::get_raw(const char* db, std::string_view key) const {
  const auto dbi = impl_->db(db);
  if (!dbi) return std::nullopt;
  const auto value = lmdb::get(impl_->txn, *dbi, key);
  if (!value) return std::nullopt;
  return std::string(*value);
}

void CacheSnapshot::for_each_raw(
    const char* db, const std::function<void(std::string_view, std::string_view)>& visit) const {
  const auto dbi = impl_->db(db);
  if (dbi) lmdb::for_each(impl_->txn, *dbi, visit);
}

std::uint64_t CacheSnapshot::generation() const {
  const auto text = get_raw(kMetaDb, "generation");
  if (!text) return 0;
  try {
    return std::stoull(*text);
  } catch (const std::exception&) {
    return 0;
  }
}

std::uint64_t CacheSnapshot::data_file_bytes() const {
  std::error_code ec;
  const auto size = fs::file_size(impl_->dir / "data.mdb", ec);
  return ec ? 0 : size;
}

}  // namespace kd::kdctl
