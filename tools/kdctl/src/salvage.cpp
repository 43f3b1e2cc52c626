#include "salvage.hpp"

#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache_snapshot.hpp"
#include "queue/job.hpp"
#include "store/record.hpp"
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
  if (!value) return split_key(key) ? std::optional(Kind::record) : std::nullopt;
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
    // The rest (client counters) only into a rebuilt cache, from the newest snapshot that has it.
    if (e.key == "schema" || target_ != SalvageTarget::fresh_cache || meta_.count(std::string(e.key)) != 0) return;
    meta_.emplace(std::string(e.key), std::string(*e.value));
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
    into_->put_raw_many(db_of(kind), batch);
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
