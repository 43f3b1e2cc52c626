// kdctl doctor's salvage: every record, job and search tree that can still be read from a data
// file (store/salvage_scan.hpp), each verified (records by their checksum and key, jobs by the
// daemon's parser, trees by the search's), written into a cache. Jobs go in through the daemon's
// job store, so the target's job index and counts change with them; the file's own index and
// counts are not copied (they describe the file). The records' last-use times (`usage`) follow the
// records salvaged.
//
// When a key is found more than once (a tree entry and a stale copy on an orphaned page), a good
// copy beats a damaged one, the newest snapshot's tree beats the older one's, and a tree entry beats
// an orphan; among orphans the newest (a record's created time, a job's update time) wins. An
// orphaned entry is sorted by its content: a value starting with a record's magic is a record, one
// the job parser reads is a job, one the tree parser reads is a tree; an orphan whose big value is
// unreadable and whose key is a full key line counts as a damaged record (records are the values
// big enough for overflow pages). Other orphans (free-page lists, meta entries) are not salvaged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "store/cache_store.hpp"
#include "store/salvage_scan.hpp"

namespace kd::kdctl {

struct SalvageCounts {
  std::uint64_t good = 0;
  std::uint64_t damaged = 0;
  std::uint64_t total() const noexcept { return good + damaged; }
};

struct SalvageReport {
  SalvageCounts records, jobs, trees;  // distinct keys
  std::uint64_t generation = 0;        // the highest generation the file's meta database held
  std::uint64_t written = 0;           // entries written to the target
  std::uint64_t already_there = 0;     // merge: good entries the target held already
  std::uint64_t unclassified = 0;      // orphaned entries that are no record, job or tree
  std::uint64_t usage_written = 0;     // records' last-use entries (the `usage` database) written
  bool jobs_indexed = true;            // false: the target's job index is incomplete (see salvage)
  SalvageSummary scan;
};

enum class SalvageTarget {
  fresh_cache,  // an empty cache being rebuilt: every good entry, and the meta database's entries
  merge,        // a cache in use: only records, jobs and trees it lacks (or holds damaged)
};

// Scans `file` and writes the good entries into `into` (nothing when null: a dry run). With
// fresh_cache the target's generation ends one above the file's; with merge it is bumped once, so
// running clients look again. Throws kd::Error when the file cannot be opened or a write fails.
SalvageReport salvage(const std::filesystem::path& file, CacheWriter* into, SalvageTarget target);

// "records: 290 good, 3 damaged, 293 total" and the same lines for jobs and trees.
std::string format_counts(const SalvageCounts& records, const SalvageCounts& jobs, const SalvageCounts& trees);
// format_counts and a line on the scan (pages, unreadable pages, orphaned leaves, notes).
std::string format_report(const SalvageReport& report);

}  // namespace kd::kdctl
