#include "queue/job_store.hpp"

#include <bit>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "store/record_usage.hpp"

namespace kd::daemon {
namespace {

using nlohmann::json;

constexpr const char* kJobsDb = "jobs";
constexpr const char* kIndexDb = "job_index";
constexpr const char* kMetaDb = "meta";
constexpr const char* kTreesDb = "trees";
constexpr const char* kRecordsDb = "records";
constexpr std::string_view kCountsKey = kJobCountsMetaKey;
constexpr std::string_view kScanKey = kJobIndexScanMetaKey;

// Index prefixes, one per state (job.hpp's order).
constexpr std::array<char, kJobStateCount> kPrefix{'q', 'r', 'd', 'f', 'c'};
constexpr std::size_t kOrderBytes = 8;
constexpr std::string_view kNoValue = "";  // index entries carry everything in their key

char prefix_of(JobState s) { return kPrefix[static_cast<std::size_t>(s)]; }

void append_be64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

std::uint64_t read_be64(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < kOrderBytes; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

bool has_order(JobState s) { return s != JobState::running; }

// The key line an index key names, nullopt for a malformed index key.
std::optional<std::string_view> line_of(std::string_view index_key) {
  if (index_key.empty()) return std::nullopt;
  const std::size_t skip = index_key[0] == 'r' ? 1 : 1 + kOrderBytes;
  if (index_key.size() <= skip) return std::nullopt;
  return index_key.substr(skip);
}

using Cursor = std::unique_ptr<MDB_cursor, lmdb::CursorDeleter>;

Cursor open_cursor(const lmdb::Txn& txn, MDB_dbi dbi) {
  MDB_cursor* raw = nullptr;
  KD_MDB_CHECK(mdb_cursor_open(txn.get(), dbi, &raw), "job_index cursor");
  return Cursor(raw);
}

// Positions `c` at the first key >= `from`; false at the end.
bool seek(MDB_cursor* c, std::string_view from, MDB_val& k, MDB_val& v) {
  k = lmdb::as_val(from);
  const int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  if (rc == MDB_NOTFOUND) return false;
  KD_MDB_CHECK(rc, "job_index cursor");
  return true;
}

bool step(MDB_cursor* c, MDB_cursor_op op, MDB_val& k, MDB_val& v) {
  const int rc = mdb_cursor_get(c, &k, &v, op);
  if (rc == MDB_NOTFOUND) return false;
  KD_MDB_CHECK(rc, "job_index cursor");
  return true;
}

// The job an index entry names, when the entry is current for it.
std::optional<Job> job_of_entry(const lmdb::Txn& txn, const JobDbs& dbs, std::string_view entry) {
  const auto line = line_of(entry);
  if (!line) return std::nullopt;
  auto job = get_job(txn, dbs, *line);
  if (!job || index_key(*job) != entry) return std::nullopt;
  return job;
}

// Walks the entries of state `s` (forward from its start, or backward from its end) while
// `visit` returns true.
void walk(const lmdb::Txn& txn, const JobDbs& dbs, JobState s, bool backward,
          const std::function<bool(Job&)>& visit) {
  const Cursor cursor = open_cursor(txn, dbs.index);
  const char p = prefix_of(s);
  MDB_val k{}, v{};
  bool at = false;
  if (!backward) {
    at = seek(cursor.get(), std::string(1, p), k, v);
  } else {
    // The first key past the prefix, then one back (or the last key when nothing follows).
    at = seek(cursor.get(), std::string(1, static_cast<char>(p + 1)), k, v)
             ? step(cursor.get(), MDB_PREV, k, v)
             : step(cursor.get(), MDB_LAST, k, v);
  }
  for (; at; at = step(cursor.get(), backward ? MDB_PREV : MDB_NEXT, k, v)) {
    const std::string_view entry = lmdb::as_view(k);
    if (entry.empty() || entry[0] != p) return;
    auto job = job_of_entry(txn, dbs, entry);
    if (job && !visit(*job)) return;
  }
}

json counts_json(const QueueCounts& c) {
  json o = json::object();
  for (std::size_t s = 0; s < kJobStateCount; ++s)
    o[std::string(to_string(static_cast<JobState>(s)))] = c.by_state[s];
  o["unreadable"] = c.unreadable;
  return o;
}

std::uint64_t entries(const lmdb::Txn& txn, MDB_dbi dbi) {
  MDB_stat st{};
  KD_MDB_CHECK(mdb_stat(txn.get(), dbi, &st), "mdb_stat");
  return st.ms_entries;
}

void add(QueueCounts& c, JobState s, int delta) {
  auto& n = c.by_state[static_cast<std::size_t>(s)];
  n = delta > 0 ? n + 1 : (n > 0 ? n - 1 : 0);
}

}  // namespace

std::uint64_t QueueCounts::total() const noexcept {
  std::uint64_t n = 0;
  for (const auto v : by_state) n += v;
  return n;
}

JobDbs open_job_dbs(const lmdb::Txn& txn) {
  JobDbs d;
  d.jobs = *lmdb::open_db(txn, kJobsDb, true);
  d.index = *lmdb::open_db(txn, kIndexDb, true);
  d.meta = *lmdb::open_db(txn, kMetaDb, true);
  d.trees = *lmdb::open_db(txn, kTreesDb, true);
  d.records = *lmdb::open_db(txn, kRecordsDb, true);
  d.usage = *lmdb::open_db(txn, kUsageDb, true);
  return d;
}

std::string index_key(const Job& job) {
  std::string k(1, prefix_of(job.state));
  k.reserve(1 + kOrderBytes + job.key.size());
  if (job.state == JobState::queued) {
    // Non-negative doubles order as their bit patterns; inverted, the best comes first.
    const double p = job.priority() > 0 ? job.priority() : 0.0;
    append_be64(k, ~std::bit_cast<std::uint64_t>(p));
  } else if (has_order(job.state)) {
    append_be64(k, static_cast<std::uint64_t>(std::max<std::int64_t>(job.updated_unix_ms, 0)));
  }
  k += job.key;
  return k;
}

std::optional<QueueCounts> stored_counts(const lmdb::Txn& txn, const JobDbs& dbs) {
  const auto text = lmdb::get(txn, dbs.meta, kCountsKey);
  if (!text) return std::nullopt;
  const json o = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded() || !o.is_object()) return std::nullopt;
  QueueCounts c;
  for (std::size_t s = 0; s < kJobStateCount; ++s) {
    const auto it = o.find(std::string(to_string(static_cast<JobState>(s))));
    if (it == o.end() || !it->is_number_unsigned()) return std::nullopt;
    c.by_state[s] = it->get<std::uint64_t>();
  }
  c.unreadable = o.value("unreadable", std::uint64_t{0});
  if (index_scan_position(txn, dbs)) return c;  // partial by design; the scan completes them
  if (c.total() != entries(txn, dbs.index) || c.total() + c.unreadable != entries(txn, dbs.jobs))
    return std::nullopt;
  return c;
}

std::optional<std::string> index_scan_position(const lmdb::Txn& txn, const JobDbs& dbs) {
  const auto position = lmdb::get(txn, dbs.meta, kScanKey);
  if (!position) return std::nullopt;
  return std::string(*position);
}

QueueCounts start_index_scan(const lmdb::Txn& txn, const JobDbs& dbs) {
  KD_MDB_CHECK(mdb_drop(txn.get(), dbs.index, 0), "job_index");
  const QueueCounts zero;
  lmdb::put(txn, dbs.meta, kCountsKey, counts_json(zero).dump());
  lmdb::put(txn, dbs.meta, kScanKey, kNoValue);
  return zero;
}

QueueCounts rebuild_index(const lmdb::Txn& txn, const JobDbs& dbs) {
  JobTxn jt(txn, dbs, start_index_scan(txn, dbs), std::string());
  while (!jt.index_step(SIZE_MAX)) {
  }
  jt.write_counts();
  return jt.counts();
}

std::optional<Job> get_job(const lmdb::Txn& txn, const JobDbs& dbs, std::string_view key) {
  if (key.empty() || key.size() > kMaxJobKeyBytes) return std::nullopt;
  const auto text = lmdb::get(txn, dbs.jobs, key);
  if (!text) return std::nullopt;
  return parse_job(key, *text);
}

void for_each_queued(const lmdb::Txn& txn, const JobDbs& dbs, const std::function<bool(Job&)>& visit) {
  walk(txn, dbs, JobState::queued, /*backward=*/false, visit);
}

std::optional<Job> lowest_queued(const lmdb::Txn& txn, const JobDbs& dbs) {
  std::optional<Job> lowest;
  walk(txn, dbs, JobState::queued, /*backward=*/true, [&](Job& j) {
    lowest = std::move(j);
    return false;
  });
  return lowest;
}

std::vector<Job> running_jobs(const lmdb::Txn& txn, const JobDbs& dbs) {
  std::vector<Job> out;
  walk(txn, dbs, JobState::running, false, [&](Job& j) {
    out.push_back(std::move(j));
    return true;
  });
  return out;
}

std::vector<Job> finished_before(const lmdb::Txn& txn, const JobDbs& dbs, JobState s,
                                 std::int64_t before_unix_ms, std::size_t limit) {
  std::vector<Job> out;
  if (limit == 0) return out;
  walk(txn, dbs, s, false, [&](Job& j) {
    if (j.updated_unix_ms >= before_unix_ms) return false;
    out.push_back(std::move(j));
    return out.size() < limit;
  });
  return out;
}

std::uint64_t count_finished_before(const lmdb::Txn& txn, const JobDbs& dbs, JobState s,
                                    std::int64_t before_unix_ms) {
  const Cursor cursor = open_cursor(txn, dbs.index);
  const char p = prefix_of(s);
  MDB_val k{}, v{};
  std::uint64_t n = 0;
  const auto before = static_cast<std::uint64_t>(std::max<std::int64_t>(before_unix_ms, 0));
  for (bool at = seek(cursor.get(), std::string(1, p), k, v); at; at = step(cursor.get(), MDB_NEXT, k, v)) {
    const std::string_view entry = lmdb::as_view(k);
    if (entry.size() <= 1 + kOrderBytes || entry[0] != p || read_be64(entry.substr(1)) >= before) break;
    ++n;
  }
  return n;
}

std::vector<Job> latest_finished(const lmdb::Txn& txn, const JobDbs& dbs, JobState s, std::size_t limit) {
  std::vector<Job> out;
  if (limit == 0) return out;
  walk(txn, dbs, s, true, [&](Job& j) {
    out.push_back(std::move(j));
    return out.size() < limit;
  });
  return out;
}

JobTxn::JobTxn(const lmdb::Txn& txn, const JobDbs& dbs, const QueueCounts& base, std::optional<std::string> scan)
    : txn_(txn), dbs_(dbs), base_(base), counts_(base), scan_(std::move(scan)) {}

void JobTxn::put(const Job& job, const std::optional<Job>& before) {
  if (job.key.empty() || job.key.size() > kMaxJobKeyBytes)
    throw Error(ErrorDomain::usage, 0, "job key of " + std::to_string(job.key.size()) + " bytes: too long");
  const std::string key = index_key(job);
  if (before) {
    // Its old state is counted when its old entry exists (not so for a job the scan has not
    // reached yet).
    const std::string old = index_key(*before);
    const bool counted = old == key ? lmdb::get(txn_, dbs_.index, old).has_value() : lmdb::del(txn_, dbs_.index, old);
    if (old != key || !counted) lmdb::put(txn_, dbs_.index, key, kNoValue);
    if (counted) add(counts_, before->state, -1);
  } else {
    if (indexed(job.key) && lmdb::get(txn_, dbs_.jobs, job.key) && counts_.unreadable > 0) --counts_.unreadable;
    lmdb::put(txn_, dbs_.index, key, kNoValue);
  }
  add(counts_, job.state, +1);
  lmdb::put(txn_, dbs_.jobs, job.key, serialize_job(job));
}

void JobTxn::erase(const Job& job) {
  if (!lmdb::del(txn_, dbs_.jobs, job.key)) return;
  const bool was_indexed = lmdb::del(txn_, dbs_.index, index_key(job));
  if (was_indexed) add(counts_, job.state, -1);
  if (!job.search_id.empty() && job.published_generation == 0) lmdb::del(txn_, dbs_.trees, job.search_id);
}

bool JobTxn::index_step(std::size_t limit) {
  if (!scan_) return true;
  const Cursor cursor = open_cursor(txn_, dbs_.jobs);
  MDB_val k{}, v{};
  bool at = scan_->empty() ? step(cursor.get(), MDB_FIRST, k, v) : seek(cursor.get(), *scan_, k, v);
  if (at && !scan_->empty() && lmdb::as_view(k) == *scan_) at = step(cursor.get(), MDB_NEXT, k, v);
  std::vector<std::pair<std::string, std::string>> batch;  // read first: puts would move the cursor
  for (; at && batch.size() < limit; at = step(cursor.get(), MDB_NEXT, k, v))
    batch.emplace_back(std::string(lmdb::as_view(k)), std::string(lmdb::as_view(v)));
  for (const auto& [key, value] : batch) {
    scan_ = key;
    scan_moved_ = true;
    auto job = key.size() <= kMaxJobKeyBytes ? parse_job(key, value) : std::nullopt;
    if (!job) {
      ++counts_.unreadable;
      continue;
    }
    if (lmdb::get(txn_, dbs_.index, index_key(*job))) continue;  // a change since the scan began
    if (job->state == JobState::running) {
      // No claim of this daemon is unindexed: a daemon that died left it running.
      job->state = JobState::queued;
      job->reason = "interrupted by a daemon restart; resumed";
      lmdb::put(txn_, dbs_.jobs, job->key, serialize_job(*job));
    }
    lmdb::put(txn_, dbs_.index, index_key(*job), kNoValue);
    add(counts_, job->state, +1);
  }
  if (at) return false;
  scan_.reset();
  scan_moved_ = true;
  return true;
}

void JobTxn::write_counts() {
  if (!changed()) return;
  lmdb::put(txn_, dbs_.meta, kCountsKey, counts_json(counts_).dump());
  if (scan_)
    lmdb::put(txn_, dbs_.meta, kScanKey, *scan_);
  else if (scan_moved_)
    lmdb::del(txn_, dbs_.meta, kScanKey);
}

}  // namespace kd::daemon
