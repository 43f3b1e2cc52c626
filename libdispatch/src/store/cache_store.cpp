#include "store/cache_store.hpp"

#include <array>
#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "key/gemm_key.hpp"
#include "store/cache_check.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRecordsDb = "records";
constexpr const char* kMetaDb = "meta";
constexpr std::array<const char*, 4> kDatabases{kRecordsDb, "trees", "jobs", kMetaDb};
constexpr std::string_view kSchemaKey = "schema";
constexpr std::string_view kGenerationKey = "generation";

constexpr int kDriverVersionsPerMajor = 1000;   // cuDriverGetVersion: 13000 = 13.0
constexpr int kCublasVersionsPerMajor = 10000;  // cublasGetVersion: 130100 = 13.1.0

constexpr std::array<Named<LookupMiss>, 6> kMissNames{{
    {LookupMiss::not_found, "not_found"},
    {LookupMiss::corrupted, "corrupted"},
    {LookupMiss::schema_mismatch, "schema_mismatch"},
    {LookupMiss::foreign_device, "foreign_device"},
    {LookupMiss::foreign_versions, "foreign_versions"},
    {LookupMiss::cache_unavailable, "cache_unavailable"},
}};

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::uint64_t read_generation(const lmdb::Txn& txn, MDB_dbi meta, const fs::path& dir) {
  const auto text = lmdb::get(txn, meta, kGenerationKey);
  if (!text) return 0;
  const auto value = parse_decimal(*text);
  if (!value) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("cache at {}: meta generation \"{}\" is not a decimal number",
                            dir.string(), *text));
  }
  return *value;
}

// 0 on either side matches: the reader does not check that version, or the record depends on no
// such library (an NVRTC kernel records cuBLAS version 0).
bool same_major(int mine, int theirs, int per_major) {
  return mine == 0 || theirs == 0 || mine / per_major == theirs / per_major;
}

// Whether a decoded record's range data is sound (issue 29). Lines without a range and plans
// without rules (every record before ranges) are not parsed.
bool range_data_sound(const Record& r) {
  const bool ranged_line = r.key_line.find("..") != std::string::npos;
  if (!ranged_line && !r.plan.has_rules()) return true;
  const auto parsed = parse_key(r.key_line);
  const auto* key = std::get_if<GemmKey>(&parsed);
  return key != nullptr && !range_problem(r, *key).has_value();
}

// The decimal n of an exact key line's n token, or nullopt (a range, or no such token).
std::optional<std::int64_t> exact_n(std::string_view value) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n < 1) return std::nullopt;
  return n;
}

// A covering range's ends from the value of its key's n token (`LO..HI`), or nullopt.
std::optional<std::pair<std::int64_t, std::int64_t>> range_of(std::string_view value) {
  const std::size_t dots = value.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  const auto lo = exact_n(value.substr(0, dots)), hi = exact_n(value.substr(dots + 2));
  if (!lo || !hi || *lo >= *hi) return std::nullopt;
  return std::pair{*lo, *hi};
}

bool is_permission_error(const Error& e) {
  return e.domain() == ErrorDomain::lmdb &&
         (e.code() == EACCES || e.code() == EPERM || e.code() == EROFS);
}

}  // namespace

std::optional<std::string> range_problem(const Record& r, const GemmKey& key) {
  if (!key.is_range()) {
    if (r.plan.has_rules()) return "an exact record's plan has grid rules (only a range record's may)";
    return std::nullopt;
  }
  if (r.kind == RecordKind::vendor) {
    if (r.plan.has_rules() || !r.plan.launches.empty()) return "a vendor verdict has nothing to launch";
    return std::nullopt;
  }
  if (r.kind != RecordKind::nvrtc_kernel) return "a range record must be a compiled kernel or a vendor verdict";
  if (const auto problem = range_plan_problem(r.plan, key.n, key.n_hi))
    return fmt::format("the plan does not serve n={}..{}: {}", key.n, key.n_hi, *problem);
  return std::nullopt;
}

std::string_view to_string(LookupMiss m) { return name_in(kMissNames, m); }

std::filesystem::path default_cache_dir() {
  const auto env = [](const char* name) -> std::string_view {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string_view{} : std::string_view{v};
  };
  if (const auto dir = env("KD_CACHE_DIR"); !dir.empty()) return fs::path(dir);
  if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute()) {
    return fs::path(xdg) / "kdispatch";
  }
  if (const auto home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "kdispatch";
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] != '\0') {
    return fs::path(found->pw_dir) / ".cache" / "kdispatch";
  }
  return fs::path(fmt::format("/tmp/kdispatch-{}", getuid()));
}

// ---------------------------------------------------------------------------------------------
// CacheReader

enum class ReaderState { open, unavailable, foreign_schema, damaged };

namespace {

// Which file a reader has open: a daemon that moves a damaged data.mdb aside and starts a new one
// changes it, and the reader must then open the new file instead of reading the old one forever.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

std::optional<FileIdentity> identity_of(const fs::path& file) {
  struct stat st{};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

}  // namespace

struct CacheReader::Impl {
  // What a snapshot's meta database says; applied to the reader only once the snapshot is taken.
  struct MetaView {
    ReaderState state = ReaderState::unavailable;
    std::string reason;
    std::uint64_t generation = 0;
  };

  fs::path dir;
  RuntimeVersions versions;
  // Declared before the transactions: they must end before their environment closes.
  std::optional<lmdb::Env> env;
  std::optional<lmdb::Txn> txn;    // the snapshot lookups read
  std::optional<lmdb::Txn> spare;  // reset; the candidate for the next snapshot (see refresh())
  MDB_dbi records = 0;
  MDB_dbi meta = 0;
  ReaderState state = ReaderState::unavailable;
  std::string reason;
  std::uint64_t generation = 0;
  std::optional<FileIdentity> file;          // the data.mdb opened
  std::optional<std::uint64_t> checked_txn;  // the last snapshot the cache check passed

  void close() noexcept {
    spare.reset();
    txn.reset();
    env.reset();
    checked_txn.reset();
  }

  void mark_unavailable(std::string why, ReaderState why_state = ReaderState::unavailable) noexcept {
    close();
    state = why_state;
    reason = std::move(why);
    generation = 0;
  }

  // Runs the cache check on the snapshot `snapshot` reads unless it passed already; nullopt when
  // LMDB may read it. Applications never read a snapshot the check has not passed (ARCHITECTURE.md,
  // "A damaged cache never crashes a process").
  std::optional<CacheCheck> verify(lmdb::Txn& snapshot) {
    if (checked_txn == snapshot.id()) return std::nullopt;
    CacheCheck check = check_open_snapshot(*env, snapshot, CheckScope::applications);
    if (!check.ok()) return check;
    checked_txn = check.txnid;
    return std::nullopt;
  }

  // Closes everything (transactions included, so none may be held outside the members).
  void reject(const CacheCheck& check) noexcept {
    mark_unavailable(check.message(), check.damaged() ? ReaderState::damaged : ReaderState::unavailable);
  }

  void open_env() {
    try {
      env.emplace(dir, lmdb::Access::read_only);
    } catch (const Error& e) {
      if (!is_permission_error(e)) throw;
      lmdb::EnvOptions no_lock;
      no_lock.lock = lmdb::LockMode::no_lock;
      env.emplace(dir, lmdb::Access::read_only, no_lock);
    }
  }

  MetaView read_meta(const lmdb::Txn& snapshot) const {
    const auto schema_text = lmdb::get(snapshot, meta, kSchemaKey);
    if (!schema_text) {
      return {ReaderState::unavailable, fmt::format("cache at {} has no schema yet (not initialized)", dir.string()), 0};
    }
    const auto schema = parse_decimal(*schema_text);
    if (schema != kCacheSchemaVersion) {
      return {ReaderState::foreign_schema,
              fmt::format("cache at {} has schema \"{}\"; this kdispatch reads schema {}", dir.string(),
                          *schema_text, kCacheSchemaVersion),
              0};
    }
    return {ReaderState::open, {}, read_generation(snapshot, meta, dir)};
  }

  void apply(MetaView view) noexcept {
    if (view.state == ReaderState::unavailable) {
      mark_unavailable(std::move(view.reason));
      return;
    }
    state = view.state;
    reason = std::move(view.reason);
    generation = view.generation;
  }

  void open() noexcept {
    close();
    try {
      file = identity_of(data_file_of(dir));
      const CacheCheck inspected = inspect_cache_dir(dir);
      if (!inspected.ok()) {
        mark_unavailable(inspected.message(), inspected.damaged() ? ReaderState::damaged : ReaderState::unavailable);
        return;
      }
      open_env();
      {
        // Handles opened in a read transaction survive only if it commits (mdb_txn_reset or
        // abort would close them), so they are opened once here and used by every snapshot.
        // The transaction must end before mark_unavailable or reject closes its environment.
        std::optional<lmdb::Txn> setup(std::in_place, *env, lmdb::Access::read_only);
        if (auto bad = verify(*setup)) {
          setup.reset();
          reject(*bad);
          return;
        }
        const auto meta_dbi = lmdb::open_db(*setup, kMetaDb, false);
        const auto records_dbi = lmdb::open_db(*setup, kRecordsDb, false);
        if (!meta_dbi || !records_dbi) {
          setup.reset();
          mark_unavailable(fmt::format("cache at {} has no kdispatch databases", dir.string()));
          return;
        }
        setup->commit();
        meta = *meta_dbi;
        records = *records_dbi;
      }
      txn.emplace(*env, lmdb::Access::read_only);
      if (auto bad = verify(*txn)) {
        reject(*bad);
        return;
      }
      apply(read_meta(*txn));
    } catch (const std::exception& e) {
      mark_unavailable(fmt::format("cache at {} unavailable: {}", dir.string(), e.what()));
    }
  }

  // A fresh snapshot replaces the current one unless its generation is lower. LMDB 0.9 pins a
  // reader to the writer's last published txnid but copies the meta page afterwards; a writer
  // two commits on has already rewritten that page, so a snapshot can be newer than its pin, and
  // the next one (taken before the writer publishes its txnid) older than that. Keeping the
  // newer snapshot makes generations never go back (pages of a snapshot newer than its pin are
  // not reused: they were freed after the pin, if at all).
  void take_snapshot() {
    if (spare) {
      spare->renew();
    } else {
      spare.emplace(*env, lmdb::Access::read_only);
    }
    if (auto bad = verify(*spare)) {
      reject(*bad);
      return;
    }
    MetaView view = read_meta(*spare);
    if (state == ReaderState::open && view.state == ReaderState::open && view.generation < generation) {
      spare->reset();
      return;
    }
    txn->reset();
    std::swap(txn, spare);
    apply(std::move(view));
  }

  std::variant<Record, LookupMiss> lookup(std::string_view key) const {
    if (state == ReaderState::unavailable) return LookupMiss::cache_unavailable;
    if (state == ReaderState::damaged) return LookupMiss::corrupted;
    if (state == ReaderState::foreign_schema) return LookupMiss::schema_mismatch;
    if (key.empty() || key.size() > static_cast<std::size_t>(mdb_env_get_maxkeysize(env->get()))) {
      return LookupMiss::not_found;
    }
    const auto bytes = lmdb::get(*txn, records, key);
    if (!bytes) return LookupMiss::not_found;
    auto decoded = deserialize_record(*bytes);
    if (const auto* error = std::get_if<RecordError>(&decoded)) {
      return *error == RecordError::schema_mismatch ? LookupMiss::schema_mismatch
                                                    : LookupMiss::corrupted;
    }
    Record& record = std::get<Record>(decoded);
    if (record.key_line != key) return LookupMiss::corrupted;
    if (!range_data_sound(record)) return LookupMiss::corrupted;
    if (!same_major(versions.driver_version, record.driver_version, kDriverVersionsPerMajor) ||
        !same_major(versions.cublas_version, record.cublas_version, kCublasVersionsPerMajor)) {
      return LookupMiss::foreign_versions;
    }
    return std::move(record);
  }

  std::variant<Record, LookupMiss> lookup_covering(std::string_view key) const {
    auto exact = lookup(key);
    if (const auto* miss = std::get_if<LookupMiss>(&exact); miss == nullptr || *miss != LookupMiss::not_found)
      return exact;
    const auto span = n_token_span(key);
    if (!span) return LookupMiss::not_found;
    const auto n = exact_n(key.substr(span->begin, span->end - span->begin));
    if (!n) return LookupMiss::not_found;
    const std::string_view prefix = key.substr(0, span->begin), suffix = key.substr(span->end);
    std::string_view best;
    std::pair<std::int64_t, std::int64_t> best_range{};
    lmdb::for_each_key_with_prefix(*txn, records, prefix, [&](std::string_view candidate) {
      const std::string_view rest = candidate.substr(prefix.size());
      const std::size_t end = std::min(rest.find(' '), rest.size());
      if (rest.substr(end) != suffix) return;
      const auto range = range_of(rest.substr(0, end));
      if (!range || *n < range->first || *n > range->second) return;
      const auto width = range->second - range->first;
      if (!best.empty() && (width > best_range.second - best_range.first ||
                            (width == best_range.second - best_range.first && range->first >= best_range.first)))
        return;
      best = candidate;
      best_range = *range;
    });
    if (best.empty()) return LookupMiss::not_found;
    return lookup(best);
  }
};

CacheReader::CacheReader(std::filesystem::path dir, RuntimeVersions versions)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  impl_->versions = versions;
  impl_->open();
}

CacheReader::~CacheReader() = default;
CacheReader::CacheReader(CacheReader&&) noexcept = default;
CacheReader& CacheReader::operator=(CacheReader&&) noexcept = default;

bool CacheReader::available() const noexcept { return impl_->state == ReaderState::open; }

const std::string& CacheReader::unavailable_reason() const noexcept { return impl_->reason; }

std::uint64_t CacheReader::refresh() noexcept {
  Impl& d = *impl_;
  if (!d.txn || identity_of(data_file_of(d.dir)) != d.file) {
    d.open();
    return d.generation;
  }
  try {
    d.take_snapshot();
  } catch (const std::exception&) {
    // MDB_MAP_RESIZED (the writer grew the map), a replaced file, ...: start over.
    d.open();
  }
  return d.generation;
}

std::uint64_t CacheReader::generation() const noexcept { return impl_->generation; }

std::variant<Record, LookupMiss> CacheReader::lookup(std::string_view full_key_line) const noexcept {
  try {
    return impl_->lookup(full_key_line);
  } catch (...) {
    return LookupMiss::cache_unavailable;
  }
}

std::variant<Record, LookupMiss> CacheReader::lookup_covering(std::string_view full_key_line) const noexcept {
  try {
    return impl_->lookup_covering(full_key_line);
  } catch (...) {
    return LookupMiss::cache_unavailable;
  }
}

std::vector<std::string> CacheReader::list_keys() const {
  std::vector<std::string> keys;
  if (impl_->state != ReaderState::open) return keys;
  lmdb::for_each(*impl_->txn, impl_->records, [&](std::string_view key, std::string_view value) {
    const auto decoded = deserialize_record(value);
    const auto* record = std::get_if<Record>(&decoded);
    if (record != nullptr && record->key_line == key) keys.emplace_back(key);
  });
  return keys;
}

// ---------------------------------------------------------------------------------------------
// CacheWriter

// The writer's environment, opened only after stage one of the cache check passed (LMDB maps the
// file and reads its meta pages there). A missing or empty data.mdb is fine: LMDB starts it.
lmdb::Env checked_env(const fs::path& dir, const lmdb::EnvOptions& options) {
  const CacheCheck inspected = inspect_cache_dir(dir);
  switch (inspected.problem) {
    case CacheProblem::none:
    case CacheProblem::no_directory:
    case CacheProblem::no_data_file:
    case CacheProblem::empty:
      return lmdb::Env(dir, lmdb::Access::read_write, options);
    default:
      throw Error(ErrorDomain::data, 0, inspected.message());
  }
}

struct CacheWriter::Impl {
  fs::path dir;
  std::size_t map_size_bytes;
  lmdb::Env env;
  // Handles are opened once, in a committed transaction, and shared by every later transaction.
  std::map<std::string, MDB_dbi, std::less<>> dbis;

  Impl(fs::path d, const lmdb::EnvOptions& options)
      : dir(std::move(d)), map_size_bytes(options.map_size_bytes), env(checked_env(dir, options)) {
    env.clear_stale_readers();
    {
      lmdb::Txn snapshot(env, lmdb::Access::read_only);
      const CacheCheck check = check_open_snapshot(env, snapshot, CheckScope::everything);
      if (!check.ok()) throw Error(ErrorDomain::data, 0, check.message());
    }
    write([&](const lmdb::Txn& txn) {
      std::map<std::string, MDB_dbi, std::less<>> opened;
      for (const char* name : kDatabases) opened.emplace(name, *lmdb::open_db(txn, name, true));
      const MDB_dbi meta = opened.at(kMetaDb);
      const auto schema_text = lmdb::get(txn, meta, kSchemaKey);
      if (!schema_text) {
        lmdb::put(txn, meta, kSchemaKey, std::to_string(kCacheSchemaVersion));
      } else if (parse_decimal(*schema_text) != kCacheSchemaVersion) {
        throw Error(ErrorDomain::data, 0,
                    fmt::format("cache at {} has schema \"{}\"; this kdispatch writes schema {}: "
                                "use a kdispatch of schema {} or a new cache directory",
                                dir.string(), *schema_text, kCacheSchemaVersion, *schema_text));
      }
      if (!lmdb::get(txn, meta, kGenerationKey)) lmdb::put(txn, meta, kGenerationKey, "0");
      return opened;
    }).swap(dbis);
  }

  // Runs `body` in one write transaction and commits; a full map becomes an error that says so.
  template <class Body>
  auto write(Body&& body) -> decltype(body(std::declval<const lmdb::Txn&>())) {
    try {
      lmdb::Txn txn(env, lmdb::Access::read_write);
      auto result = body(txn);
      txn.commit();
      return result;
    } catch (const Error& e) {
      if (e.domain() != ErrorDomain::lmdb || e.code() != MDB_MAP_FULL) throw;
      throw Error(ErrorDomain::lmdb, MDB_MAP_FULL,
                  fmt::format("the kernel cache at {} is full (map size {} MiB): evict records or "
                              "use a larger map ({})",
                              dir.string(), map_size_bytes >> 20, e.what()));
    }
  }

  std::uint64_t bump_generation(const lmdb::Txn& txn) {
    const MDB_dbi meta = dbis.at(kMetaDb);
    const std::uint64_t next = read_generation(txn, meta, dir) + 1;
    lmdb::put(txn, meta, kGenerationKey, std::to_string(next));
    return next;
  }

  enum class Create { if_missing, never };

  // The handle of database `name`, opening it (in its own committed transaction) on first use;
  // nullopt when it does not exist and `create` is never.
  std::optional<MDB_dbi> db(std::string_view name, Create create) {
    if (const auto it = dbis.find(name); it != dbis.end()) return it->second;
    const std::string owned(name);
    const bool make = create == Create::if_missing;
    lmdb::Txn txn(env, make ? lmdb::Access::read_write : lmdb::Access::read_only);
    const auto dbi = lmdb::open_db(txn, owned.c_str(), make);
    if (!dbi) return std::nullopt;
    txn.commit();
    dbis.emplace(owned, *dbi);
    return dbi;
  }
};

CacheWriter::CacheWriter(std::filesystem::path dir) : CacheWriter(std::move(dir), lmdb::EnvOptions{}) {}

CacheWriter::CacheWriter(std::filesystem::path dir, const lmdb::EnvOptions& options)
    : impl_(std::make_unique<Impl>(std::move(dir), options)) {}

CacheWriter::~CacheWriter() = default;
CacheWriter::CacheWriter(CacheWriter&&) noexcept = default;
CacheWriter& CacheWriter::operator=(CacheWriter&&) noexcept = default;

std::uint64_t CacheWriter::commit_record(const Record& r) {
  if (r.key_line.empty()) throw Error(ErrorDomain::usage, 0, "commit_record: the record has no key line");
  const std::string bytes = serialize_record(r);
  return impl_->write([&](const lmdb::Txn& txn) {
    lmdb::put(txn, impl_->dbis.at(kRecordsDb), r.key_line, bytes);
    return impl_->bump_generation(txn);
  });
}

bool CacheWriter::evict(std::string_view full_key_line) {
  return impl_->write([&](const lmdb::Txn& txn) {
    if (!lmdb::del(txn, impl_->dbis.at(kRecordsDb), full_key_line)) return false;
    impl_->bump_generation(txn);
    return true;
  });
}

std::optional<std::uint64_t> CacheWriter::write_records(
    const std::function<bool(const lmdb::Txn&)>& body) {
  return impl_->write([&](const lmdb::Txn& txn) -> std::optional<std::uint64_t> {
    if (!body(txn)) return std::nullopt;
    return impl_->bump_generation(txn);
  });
}

std::uint64_t CacheWriter::generation() const {
  const lmdb::Txn txn(impl_->env, lmdb::Access::read_only);
  return read_generation(txn, impl_->dbis.at(kMetaDb), impl_->dir);
}

void CacheWriter::put_raw(const char* db, std::string_view key, std::string_view value) {
  const MDB_dbi dbi = *impl_->db(db, Impl::Create::if_missing);
  impl_->write([&](const lmdb::Txn& txn) {
    lmdb::put(txn, dbi, key, value);
    return 0;
  });
}

std::optional<std::string> CacheWriter::get_raw(const char* db, std::string_view key) const {
  const auto dbi = impl_->db(db, Impl::Create::never);
  if (!dbi) return std::nullopt;
  const lmdb::Txn txn(impl_->env, lmdb::Access::read_only);
  const auto value = lmdb::get(txn, *dbi, key);
  if (!value) return std::nullopt;
  return std::string(*value);
}

bool CacheWriter::del_raw(const char* db, std::string_view key) {
  const auto dbi = impl_->db(db, Impl::Create::never);
  if (!dbi) return false;
  return impl_->write([&](const lmdb::Txn& txn) { return lmdb::del(txn, *dbi, key); });
}

std::vector<std::pair<std::string, std::string>> CacheWriter::scan_raw(const char* db) const {
  std::vector<std::pair<std::string, std::string>> entries;
  const auto dbi = impl_->db(db, Impl::Create::never);
  if (!dbi) return entries;
  const lmdb::Txn txn(impl_->env, lmdb::Access::read_only);
  lmdb::for_each(txn, *dbi, [&](std::string_view k, std::string_view v) {
    entries.emplace_back(std::string(k), std::string(v));
  });
  return entries;
}

void CacheWriter::put_raw_many(const char* db, const std::vector<std::pair<std::string, std::string>>& entries) {
  const MDB_dbi dbi = *impl_->db(db, Impl::Create::if_missing);
  impl_->write([&](const lmdb::Txn& txn) {
    for (const auto& [key, value] : entries) lmdb::put(txn, dbi, key, value);
    return 0;
  });
}

std::uint64_t CacheWriter::bump_generation() {
  return impl_->write([&](const lmdb::Txn& txn) { return impl_->bump_generation(txn); });
}

lmdb::Env& CacheWriter::env() noexcept { return impl_->env; }

}  // namespace kd
