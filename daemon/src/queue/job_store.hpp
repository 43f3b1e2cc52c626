// The job table's layout in LMDB, and every read and change of it inside one transaction.
//
//   jobs        canonical key line -> job JSON (job.hpp)
//   job_index   one empty-valued entry per readable job, ordered for the queue's questions:
//                 'q' be64(~priority bits) line           queued, highest priority first
//                 'r' line                                running
//                 'd'|'f'|'c' be64(updated_unix_ms) line  done, failed, cancelled: oldest first
//   meta        "job_counts" -> {"queued": n, ..., "unreadable": n}: the jobs per state
//
// So nothing reads every job: the daemon starts from the stored counts, status answers from
// counts kept in memory, a claim reads the index from its best end, the bound on queued jobs
// reads its worst end, and the retention purge reads only what it removes. The counts and the
// index change in the same transaction as the jobs. At open, the counts are checked against the
// databases' entry counts (O(1)); when they disagree (a cache written before the index existed)
// the index is built again by a scan in steps (meta "job_index_scan" holds the last job key
// indexed), between the queue's other transactions: the daemon serves meanwhile, on the part
// indexed so far, and a kill resumes the scan where it stopped.
#pragma once

#include <lmdb.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "key/gemm_key.hpp"
#include "queue/job.hpp"
#include "store/lmdb.hpp"

namespace kd::daemon {

// Jobs per state, and records of the jobs database that do not parse (damaged, or written by a
// later schema): kept, never indexed, counted so that the totals still add up.
struct QueueCounts {
  std::uint64_t by_state[kJobStateCount] = {};
  std::uint64_t unreadable = 0;
  std::uint64_t total() const noexcept;  // readable jobs
  std::uint64_t of(JobState s) const noexcept { return by_state[static_cast<std::size_t>(s)]; }
  bool operator==(const QueueCounts&) const = default;
};

// The meta keys of the job table: the counts per state, and an index scan's position. They describe
// this cache's index alone: a tool that copies jobs into another cache (kdctl doctor) must not
// copy them, but change the target's through JobTxn.
inline constexpr std::string_view kJobCountsMetaKey = "job_counts";
inline constexpr std::string_view kJobIndexScanMetaKey = "job_index_scan";

// The databases a job transaction touches, opened (created) once by open_job_dbs.
struct JobDbs {
  MDB_dbi jobs = 0;
  MDB_dbi index = 0;
  MDB_dbi meta = 0;
  MDB_dbi trees = 0;    // search trees: a purged job's tree goes with it when no record cites it
  MDB_dbi records = 0;  // read only here (prewarm of a key whose record is cached)
  MDB_dbi usage = 0;    // store/record_usage.hpp
};
JobDbs open_job_dbs(const lmdb::Txn& write_txn);

// A job's key line: what the key parser accepts (kMaxKeyLineBytes), so that every key a client
// may send can be queued. LMDB keys are at most 511 bytes, and an index key is the line plus 9.
inline constexpr std::size_t kMaxJobKeyBytes = kMaxKeyLineBytes;
static_assert(kMaxJobKeyBytes + 9 <= 511, "a job's index key must fit LMDB's key limit");

// The index key of `job` in its current state.
std::string index_key(const Job& job);

// The counts stored in meta when they agree with the entry counts of the jobs and index
// databases (or an index scan is under way, whose counts go with its position), else nullopt
// (then start_index_scan).
std::optional<QueueCounts> stored_counts(const lmdb::Txn& txn, const JobDbs& dbs);
// The last job key an index scan under way has indexed ("" before the first), nullopt when the
// index is complete.
std::optional<std::string> index_scan_position(const lmdb::Txn& txn, const JobDbs& dbs);
// Empties the index and the counts and starts a scan; returns the (zero) counts.
QueueCounts start_index_scan(const lmdb::Txn& write_txn, const JobDbs& dbs);
// Empties the index and rebuilds it and the counts from every job in this transaction; writes
// the counts. For tools and tests; the daemon scans in steps (JobTxn::index_step).
QueueCounts rebuild_index(const lmdb::Txn& write_txn, const JobDbs& dbs);

// Reads, for any transaction (read-only ones on any thread). Index entries that do not match
// their job (only a damaged cache has them) are skipped.
std::optional<Job> get_job(const lmdb::Txn& txn, const JobDbs& dbs, std::string_view key);
// Queued jobs, highest priority first, until `visit` returns false.
void for_each_queued(const lmdb::Txn& txn, const JobDbs& dbs, const std::function<bool(Job&)>& visit);
// The queued job of lowest priority, nullopt when none is queued.
std::optional<Job> lowest_queued(const lmdb::Txn& txn, const JobDbs& dbs);
std::vector<Job> running_jobs(const lmdb::Txn& txn, const JobDbs& dbs);
// Jobs in finished state `s` last changed before `before_unix_ms`, oldest first, at most `limit`.
std::vector<Job> finished_before(const lmdb::Txn& txn, const JobDbs& dbs, JobState s,
                                 std::int64_t before_unix_ms, std::size_t limit);
// How many jobs finished_before would list without a limit (reads index keys only).
std::uint64_t count_finished_before(const lmdb::Txn& txn, const JobDbs& dbs, JobState s,
                                    std::int64_t before_unix_ms);
// Jobs in finished state `s`, most recently changed first, at most `limit`.
std::vector<Job> latest_finished(const lmdb::Txn& txn, const JobDbs& dbs, JobState s, std::size_t limit);

// Changes inside one write transaction. `base` is the committed counts; counts() adds this
// transaction's changes. After the commit, the owner takes counts() as the committed counts (and
// scan_position() as the scan's). `scan` is the index scan's position (nullopt: complete): a job
// past it is not indexed or counted yet, so changing it adds its new state only, and the scan
// then finds it indexed and skips it.
class JobTxn {
public:
  JobTxn(const lmdb::Txn& txn, const JobDbs& dbs, const QueueCounts& base,
         std::optional<std::string> scan = std::nullopt);

  const lmdb::Txn& txn() const noexcept { return txn_; }
  const JobDbs& dbs() const noexcept { return dbs_; }
  std::optional<Job> get(std::string_view key) const { return get_job(txn_, dbs_, key); }
  // Stores `job`. `before` is the job as get() returned it: nullopt for a new key (or one whose
  // record does not parse, which this replaces). Requires job.key.size() <= kMaxJobKeyBytes.
  void put(const Job& job, const std::optional<Job>& before);
  // Removes `job` (as get() returned it) and its index entry; also its search tree when no
  // record can cite it (it never published).
  void erase(const Job& job);

  // One step of the index scan: indexes and counts up to `limit` jobs after the position (jobs a
  // change already indexed are skipped; `running` ones were left by a daemon that died and go
  // back to queued). Returns true when the scan is complete (the position is then removed).
  bool index_step(std::size_t limit);
  const std::optional<std::string>& scan_position() const noexcept { return scan_; }

  const QueueCounts& counts() const noexcept { return counts_; }
  bool changed() const noexcept { return counts_ != base_ || scan_moved_; }
  // Writes counts() (and the scan position) into meta when they changed. Call once, last, before
  // the commit.
  void write_counts();

private:
  bool indexed(std::string_view key) const { return !scan_ || key <= *scan_; }

  const lmdb::Txn& txn_;
  const JobDbs& dbs_;
  QueueCounts base_;
  QueueCounts counts_;
  std::optional<std::string> scan_;
  bool scan_moved_ = false;
};

}  // namespace kd::daemon
