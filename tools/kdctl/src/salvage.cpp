#include "salvage.hpp"

#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache_snapshot.hpp"
#include "common/error.hpp"
#include "queue/job.hpp"
#include "queue/job_store.hpp"
#include "store/lmdb.hpp"
#include "store/record.hpp"
#include "store/record_usage.hpp"
#include "tree/search_tree.hpp"

namespace kd::kdctl {
namespace {

namespace fs = std::filesystem;
using Found = SalvagedEntry::Found;

constexpr const char* kRecordsDb = "records";
constexpr const char* kJobsDb = "jobs";
constexpr const char* kTreesDb = "trees";
constexpr const char* kMetaDb = "meta";
constexpr std::string_view kRecordMagic = "KDR";
// Writes are committed in batches of this many entries (one LMDB transaction each).
constexpr std::size_t kBatchEntries = 512;

enum class Kind { record, job, tree };

struct Verdict {
  bool good = false;
  std::int64_t stamp = 0;  // newer wins among orphans
};

Verdict verify_record(std::string_view key, const std::optional<std::string_view>& value) {
  if (!value) return {};
  const auto decoded = deserialize_record(*value);
  const auto* record = std::get_if<Record>(&decoded);
  if (record == nullptr || record->key_line != key) return {};
  return {true, record->created_unix_s};
}

Verdict verify_job(std::string_view key, const std::optional<std::string_view>& value) {
  if (!value) return {};
  const auto job = daemon::parse_job(key, *value);
  if (!job) return {};
  return {true, job->updated_unix_ms};
}

Verdict verify_tree(std::string_view key, const std::optional<std::string_view>& value) {
  if (!value) return {};
  const auto j = nlohmann::json::parse(*value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return {};
  try {
    const auto tree = search::SearchTree::from_json(j);
    if (tree.search_id() != key) return {};
  } catch (const nlohmann::json::exception&) {
    return {};
  }
  return {true, 0};
}

Verdict verify(Kind kind, std::string_view key, const std::optional<std::string_view>& value) {
  switch (kind) {
    case Kind::record: return verify_record(key, value);
    case Kind::job: return verify_job(key, value);
    case Kind::tree: return verify_tree(key, value);
  }
  return {};
}

const char* db_of(Kind kind) {
  switch (kind) {
    case Kind::record: return kRecordsDb;
    case Kind::job: return kJobsDb;
    case Kind::tree: return kTreesDb;
  }
  return kRecordsDb;
}

// What an entry found on an orphaned page is, judged by its content; nullopt for none of ours.
std::optional<Kind> classify_orphan(std::string_view key, const std::optional<std::string_view>& value) {
  if (!value) return split_op_key(key) ? std::optional(Kind::record) : std::nullopt;
  if (value->substr(0, kRecordMagic.size()) == kRecordMagic) return Kind::record;
  if (verify_job(key, value).good) return Kind::job;
  if (verify_tree(key, value).good) return Kind::tree;
  return std::nullopt;
}

std::optional<Kind> kind_of_db(std::string_view db) {
  if (db == kRecordsDb) return Kind::record;
  if (db == kJobsDb) return Kind::job;
  if (db == kTreesDb) return Kind::tree;
  return std::nullopt;
}

std::uint64_t entries(const lmdb::Txn& txn, MDB_dbi dbi) {
  MDB_stat st{};
  KD_MDB_CHECK(mdb_stat(txn.get(), dbi, &st), "mdb_stat");
  return st.ms_entries;
}

// Writes salvaged jobs (each verified by the parser) into `into` in one transaction, through the
// daemon's job store, so that the job index and the counts in meta change with them (job_store.hpp).
// A job salvaged as `running` goes back to `queued` when `resume_running` (a merge: a daemon may be
// running the target and would never finish it); a rebuilt cache keeps it, and kdispatchd resumes
// it at its start. A target without jobs gets an (empty) index first. Returns false when the
// target's index is incomplete (jobs without counts, or counts that disagree with the databases):
// the jobs are then stored alone, and kdispatchd indexes them at its next start, as it does every
// job of such a cache.
bool put_jobs(CacheWriter& into, const std::vector<std::pair<std::string, std::string>>& batch, bool resume_running) {
  lmdb::Txn txn(into.env(), lmdb::Access::read_write);
  const daemon::JobDbs dbs = daemon::open_job_dbs(txn);
  auto base = daemon::stored_counts(txn, dbs);
  if (!base && entries(txn, dbs.jobs) == 0) base = daemon::rebuild_index(txn, dbs);
  if (!base) {
    for (const auto& [key, value] : batch) lmdb::put(txn, dbs.jobs, key, value);
    txn.commit();
    return false;
  }
  daemon::JobTxn jt(txn, dbs, *base, daemon::index_scan_position(txn, dbs));
  for (const auto& [key, value] : batch) {
    auto job = daemon::parse_job(key, value);
    if (!job || job->key.size() > daemon::kMaxJobKeyBytes) {
      // Too long to index (a cache from before the limit): kept; the daemon counts it unreadable.
      lmdb::put(txn, dbs.jobs, key, value);
      continue;
    }
    const bool resumed = resume_running && job->state == daemon::JobState::running;
    if (resumed) {
      job->state = daemon::JobState::queued;
      job->reason = "interrupted; salvaged by kdctl doctor and resumed";
    }
    jt.put(*job, jt.get(key));
    if (!resumed) lmdb::put(txn, dbs.jobs, key, value);  // the salvaged bytes, as found
  }
  jt.write_counts();
  txn.commit();
  return true;
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

class Salvager {
public:
  Salvager(CacheWriter* into, SalvageTarget target) : into_(into), target_(target) {}

  void take(const SalvagedEntry& e) {
    if (e.db == kMetaDb) return take_meta(e);
    if (e.db == kUsageDb) return take_usage(e);
    std::optional<Kind> kind = e.db.empty() ? classify_orphan(e.key, e.value) : kind_of_db(e.db);
    if (!kind) {
      if (e.db.empty()) ++report_.unclassified;
      return;
    }
    const Verdict v = verify(*kind, e.key, e.value);
    auto& picks = picks_[static_cast<int>(*kind)];
    const auto [it, fresh] = picks.try_emplace(std::string(e.key), Pick{e.found, v});
    if (!fresh && !better(Pick{e.found, v}, it->second)) return;
    it->second = Pick{e.found, v};
    if (v.good) queue(*kind, e.key, *e.value);
  }

  SalvageReport finish() {
    for (int k = 0; k < 3; ++k) flush(static_cast<Kind>(k));
    flush_usage();
    if (!meta_.empty()) flush_meta();
    const auto count = [&](Kind kind) {
      SalvageCounts c;
      for (const auto& [key, pick] : picks_[static_cast<int>(kind)]) (pick.verdict.good ? c.good : c.damaged) += 1;
      return c;
    };
    report_.records = count(Kind::record);
    report_.jobs = count(Kind::job);
    report_.trees = count(Kind::tree);
    if (into_ != nullptr) {
      if (target_ == SalvageTarget::fresh_cache) into_->put_raw(kMetaDb, "generation", std::to_string(report_.generation));
      into_->bump_generation();
    }
    return report_;
  }

  SalvageReport& report() noexcept { return report_; }

private:
  struct Pick {
    Found found;
    Verdict verdict;
  };

  // Whether candidate `c` replaces the current pick `p` (see salvage.hpp).
  static bool better(const Pick& c, const Pick& p) {
    if (c.verdict.good != p.verdict.good) return c.verdict.good;
    if (!c.verdict.good) return false;
    if (c.found != p.found) return c.found < p.found;
    return c.found == Found::orphan_page && c.verdict.stamp > p.verdict.stamp;
  }

  void take_meta(const SalvagedEntry& e) {
    if (!e.value) return;
    if (e.key == "generation") {
      if (const auto g = parse_decimal(*e.value)) report_.generation = std::max(report_.generation, *g);
      return;
    }
    // The job counts and index scan position describe the file's job index, which is not copied:
    // the target's change with the jobs written into it (put_jobs).
    if (e.key == daemon::kJobCountsMetaKey || e.key == daemon::kJobIndexScanMetaKey) return;
    // The rest (client counters) only into a rebuilt cache, from the newest snapshot that has it.
    if (e.key == "schema" || target_ != SalvageTarget::fresh_cache || meta_.count(std::string(e.key)) != 0) return;
    meta_.emplace(std::string(e.key), std::string(*e.value));
  }

  // A record's last use (the daemon's LRU eviction): the latest any snapshot holds. Written at the
  // end for the records that were salvaged or that the target holds good.
  void take_usage(const SalvagedEntry& e) {
    if (!e.value) return;
    const auto ms = decode_usage(*e.value);
    if (!ms) return;
    auto [it, fresh] = usage_.try_emplace(std::string(e.key), *ms);
    if (!fresh) it->second = std::max(it->second, *ms);
  }

  void flush_usage() {
    if (into_ == nullptr || usage_.empty()) return;
    const auto& records = picks_[static_cast<int>(Kind::record)];
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& [key, ms] : usage_) {
      const auto pick = records.find(key);
      if (pick == records.end() || !pick->second.verdict.good) continue;
      if (target_ == SalvageTarget::merge) {
        const auto existing = into_->get_raw(kUsageDb, key);
        const auto before = existing ? decode_usage(*existing) : std::nullopt;
        if (before && *before >= ms) continue;
      }
      entries.emplace_back(key, encode_usage(ms));
    }
    if (entries.empty()) return;
    into_->put_raw_many(kUsageDb, entries);
    report_.usage_written += entries.size();
  }

  void queue(Kind kind, std::string_view key, std::string_view value) {
    if (into_ == nullptr) return;
    if (target_ == SalvageTarget::merge) {
      const auto existing = into_->get_raw(db_of(kind), key);
      if (existing && verify(kind, key, std::string_view(*existing)).good) {
        ++report_.already_there;
        return;
      }
    }
    auto& batch = batches_[static_cast<int>(kind)];
    batch.emplace_back(std::string(key), std::string(value));
    if (batch.size() >= kBatchEntries) flush(kind);
  }

  void flush(Kind kind) {
    auto& batch = batches_[static_cast<int>(kind)];
    if (batch.empty() || into_ == nullptr) return;
    if (kind == Kind::job) {
      if (!put_jobs(*into_, batch, target_ == SalvageTarget::merge)) report_.jobs_indexed = false;
    } else {
      into_->put_raw_many(db_of(kind), batch);
    }
    report_.written += batch.size();
    batch.clear();
  }

  void flush_meta() {
    if (into_ == nullptr) return;
    std::vector<std::pair<std::string, std::string>> entries(meta_.begin(), meta_.end());
    into_->put_raw_many(kMetaDb, entries);
  }

  CacheWriter* into_;
  SalvageTarget target_;
  SalvageReport report_;
  std::map<std::string, Pick> picks_[3];
  std::vector<std::pair<std::string, std::string>> batches_[3];
  std::map<std::string, std::string> meta_;
  std::map<std::string, std::int64_t> usage_;  // full key line -> last use, unix ms
};

}  // namespace

SalvageReport salvage(const fs::path& file, CacheWriter* into, SalvageTarget target) {
  Salvager salvager(into, target);
  const SalvageSummary scan = scan_for_salvage(file, [&](const SalvagedEntry& e) { salvager.take(e); });
  SalvageReport report = salvager.finish();
  report.scan = scan;
  return report;
}

std::string format_counts(const SalvageCounts& records, const SalvageCounts& jobs, const SalvageCounts& trees) {
  const auto line = [](std::string_view what, const SalvageCounts& c) {
    return fmt::format("{}: {} good, {} damaged, {} total\n", what, c.good, c.damaged, c.total());
  };
  return line("records", records) + line("jobs", jobs) + line("trees", trees);
}

std::string format_report(const SalvageReport& r) {
  std::string out = format_counts(r.records, r.jobs, r.trees);
  out += fmt::format("scan: {} pages of {} bytes{}, {} usable meta page(s), {} unreadable page(s), {} orphaned leaf "
                     "page(s)\n",
                     r.scan.pages, r.scan.page_bytes, r.scan.page_size_guessed ? " (page size guessed)" : "",
                     r.scan.usable_metas, r.scan.unreadable_pages, r.scan.orphan_leaves);
  for (const auto& note : r.scan.notes) out += fmt::format("  {}\n", note);
  return out;
}

}  // namespace kd::kdctl
