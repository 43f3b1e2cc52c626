// The persistent job queue: the daemon's only path to LMDB writes.
//
// Jobs live in the cache's "jobs" database (one JSON record per canonical key line) with an
// index by state and priority and their counts per state (job_store.hpp); nothing holds every job
// in memory, so opening the queue and answering status cost the same with ten jobs or a million.
// Every change runs on one writer thread that groups all changes pending at the moment into one
// LMDB write transaction (group commit); a change's completion runs only after its transaction
// committed, so a caller that acknowledges in its completion never acknowledges a change that
// kill -9 can lose. LMDB commits are atomic, so a kill at any moment leaves the previous or the
// next committed state, never half of a record, and the counts and index always match the jobs.
//
// Bounds: at most `max_queued_jobs` jobs are queued; a new job beyond it takes the place of the
// lowest-priority queued job when its own priority is higher, else it is refused; both are counted
// (jobs_dropped). Finished jobs leave by purge() (the daemon's retention period, `kdctl purge`).
//
// On construction, jobs found `running` (the daemon died while searching them) go back to
// `queued` with the interruption noted, in one transaction before the constructor returns. A
// cache whose index is missing or does not match is indexed in the background, in steps between
// the other transactions (indexing()); the running jobs it finds go back to queued then.
//
// Thread safety: all public members may be called from any thread. Completions run on the writer
// thread: keep them short (post to an io_context).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "queue/job.hpp"
#include "queue/job_store.hpp"
#include "key/n_buckets.hpp"
#include "store/cache_store.hpp"

namespace kd::daemon {

struct MissReport {
  std::string key;  // canonical line
  std::uint64_t count = 1;
  // `key` parsed, sent with a key's first miss (the server memoises its lines); null otherwise: the
  // queue then takes the parse it kept, or parses the line when it has none.
  ParsedKey parsed;
};

struct PrewarmRequest {
  std::string key;  // canonical line
  std::string proposer;
  JobBudgets budgets;
  ParsedKey parsed;  // as in MissReport
};

// Outcome of one committed (or failed) write transaction.
struct CommitResult {
  bool committed = false;
  std::string error;  // the LMDB failure when !committed (e.g. cache full)
};
using Completion = std::function<void(const CommitResult&)>;

// A prewarm key the queue did not take, and why (one line for users).
struct Refused {
  std::string key;
  std::string message;
};

struct QueueLimits {
  std::uint64_t max_queued_jobs = 100000;
  // Issue 29: a miss queues the bucket of its n (queue/miss_buckets.hpp); none by default here,
  // the daemon passes its `buckets` setting.
  NBuckets buckets;
};

// What purge() removes: finished jobs in `states` (empty: done, failed and cancelled; queued and
// running are never purged) last changed before `before_unix_ms`.
struct PurgeRequest {
  std::vector<JobState> states;
  std::int64_t before_unix_ms = 0;
  enum class Mode : std::uint8_t { remove, count_only } mode = Mode::remove;
};
struct PurgeResult {
  std::array<std::uint64_t, kJobStateCount> by_state{};
  std::uint64_t total() const noexcept;
};

// Least-recently-used eviction of records (record_eviction.hpp does the choosing).
struct EvictionResult {
  std::uint64_t records = 0;       // removed
  std::uint64_t bytes_before = 0;  // records_bytes() before and after
  std::uint64_t bytes_after = 0;
  std::uint64_t generation = 0;    // after the last batch; 0 when nothing was removed
};

// Counted since the queue opened (committed changes only).
struct QueueTallies {
  std::uint64_t jobs_dropped = 0;     // queued jobs displaced or new ones refused by the bound
  std::uint64_t jobs_purged = 0;      // finished jobs removed by purge()
  std::uint64_t records_evicted = 0;  // by evict_lru()
  std::uint64_t usage_dropped = 0;    // usage notes beyond the pending bound (note_usage)
};

class JobQueue {
public:
  // Opens (creating) the cache at `cache_dir` as its only writer. Throws kd::Error when the cache
  // cannot be opened (another schema, unwritable directory).
  explicit JobQueue(const std::filesystem::path& cache_dir, QueueLimits limits = {});
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Adds counts to existing jobs (any state) or creates queued jobs for unseen keys (within the
  // bound). Keys longer than kMaxJobKeyBytes are ignored. A miss counts for the job of its n's
  // bucket (limits().buckets: the same key with n=LO..HI). A done job whose record is gone from
  // the cache (record_gone) is queued again.
  void report_misses(std::vector<MissReport> misses, Completion done);
  // Creates queued jobs, or re-queues failed/cancelled ones and done ones whose record is gone
  // (evicted: record_gone); queued/running jobs and done ones with their record keep their
  // state. A full key whose record is in the cache and that has no job gets a done job.
  // `refused` lists the keys the bound on queued jobs (or their length) turned away.
  using PrewarmDone = std::function<void(const CommitResult&, const std::vector<Refused>& refused)>;
  void prewarm(std::vector<PrewarmRequest> requests, PrewarmDone done);
  // Marks a queued or running job cancelled. `found` says whether it was queued or running.
  void cancel(std::string key, std::function<void(const CommitResult&, bool found)> done);

  // Synchronous (waits for the commit): the highest-priority queued job whose backoff has passed
  // and that `eligible` accepts, marked running with attempts + 1; nullopt when none. `eligible`
  // sees each job with its parsed key (Job::parsed; remembered, not parsed per claim), and so does
  // the caller.
  std::optional<Job> claim_next(const std::function<bool(const Job&)>& eligible);
  // Synchronous: applies `change` to job `key` (no-op when absent) and commits.
  void update(const std::string& key, const std::function<void(Job&)>& change);
  // Synchronous: commits a winner record (with a generation bump) and marks job `key` done in
  // the same writer cycle, with `reason` as its reason (a vendor verdict keeps the search's words;
  // empty for a kernel); the record counts as used now (note_usage). Returns the new generation.
  // Throws kd::Error on LMDB failure.
  std::uint64_t commit_winner(const std::string& key, const Record& record, std::string reason = {});
  // Synchronous: queues again, as if missed, the keys of vendor verdicts made by a search older
  // than `search_version` (Record::search_version), unless their job is queued or running; the
  // verdicts keep serving until the new search replaces them. Returns how many. Run at startup.
  std::size_t requeue_stale_verdicts(int search_version);
  // Synchronous: stores a search tree (JSON) under its search id in the `trees` database, so
  // `kdctl show` can explain the job's outcome whether or not it published.
  void store_tree(const std::string& search_id, std::string tree_json);
  // Stores `value` under `key` in the cache's `meta` database, in the same group commit as the job
  // changes pending with it; `done` runs after the commit. `key` must not be one of the cache's
  // own ("schema", "generation", "job_counts").
  void put_meta(std::string key, std::string value, Completion done);
  // Synchronous: the `meta` value under `key`, nullopt when absent. Throws kd::Error on LMDB failure.
  std::optional<std::string> get_meta(const std::string& key);

  // Re-reads the cache's generation, which another process may have bumped (kdctl import and
  // evict write the cache themselves), and keeps the larger of it and the known one. `done` runs
  // on the writer thread with the generation before and after.
  void sync_generation(std::function<void(const CommitResult&, std::uint64_t before, std::uint64_t after)> done);

  // Synchronous: removes (or, with count_only, counts) the finished jobs `request` names, in
  // transactions of at most kPurgeBatch jobs (a kill between them loses nothing: each removes
  // whole jobs with their index entries and counts). Returns early, with what it removed, once
  // `*stop` is set (a shutdown).
  static constexpr std::size_t kPurgeBatch = 512;
  PurgeResult purge(const PurgeRequest& request, const std::atomic<bool>* stop = nullptr);

  // Records that applications used these full key lines at `unix_ms` (client `usage` reports,
  // publications). Kept in memory, at most kMaxPendingUsage keys (more are dropped and counted)
  // until flush_usage() writes them, for keys whose record exists, into the `usage` database.
  static constexpr std::size_t kMaxPendingUsage = 1 << 17;
  void note_usage(const std::vector<std::string>& full_key_lines, std::int64_t unix_ms);
  // Synchronous: commits the pending usage notes.
  void flush_usage();

  // Bytes the records database occupies (its pages; O(1)).
  std::uint64_t records_bytes() const;
  // Synchronous: when records_bytes() is above `max_bytes`, removes the least recently used
  // records (with their usage entries, done jobs and search trees) until it is at most
  // `target_bytes`, in transactions of at most kEvictBatch records, each bumping the generation;
  // `on_batch(generation, records)` runs after each commit (the daemon notifies subscribers).
  // Returns early once `*stop` is set.
  static constexpr std::size_t kEvictBatch = 64;
  EvictionResult evict_lru(std::uint64_t max_bytes, std::uint64_t target_bytes,
                           const std::function<void(std::uint64_t, std::uint64_t)>& on_batch = {},
                           const std::atomic<bool>* stop = nullptr);

  QueueCounts counts() const;
  // True while the job index is being built in the background (job_store.hpp): counts, claims
  // and top_jobs then cover the jobs indexed so far.
  bool indexing() const noexcept { return indexing_.load(std::memory_order_relaxed); }
  QueueTallies tallies() const;
  const QueueLimits& limits() const noexcept { return limits_; }
  std::optional<Job> find(const std::string& key) const;
  // The jobs of `keys` (canonical lines), in order, nullopt where there is none: each read by its
  // key in one read transaction (the `jobs` request).
  std::vector<std::optional<Job>> find_each(const std::vector<std::string>& keys) const;
  // Up to `n` jobs for status: queued ones by priority, then running ones, then the most recently
  // finished. Reads only the jobs it returns.
  std::vector<Job> top_jobs(std::size_t n) const;
  std::uint64_t generation() const;
  std::uint64_t transactions_committed() const;

  // Commits everything pending and stops the writer thread; later changes complete with an error.
  void stop();

  // The cache's environment, open until destruction (stop() leaves it open): for the compact copies
  // (backup/cache_backups.hpp), which read it through transactions of their own.
  const lmdb::Env& cache_env() const;

private:
  struct Pending;
  void submit(Pending item);
  // The job key a miss's canonical line counts for (report_misses); writer thread only.
  const std::string& job_key_of_miss(const std::string& line);
  // Whether `job` is done and its record is gone from the cache (evicted, or a search that ended
  // without one before vendor verdicts). Only a full key can tell: a shape line's records are
  // stored under the full lines of its GPUs, so a shape-line job is never taken for gone.
  static bool record_gone(JobTxn& jt, const Job& job, const ParsedKey& parsed);
  // A queued job for `key` (parsed: `parsed`) seen first at `now`.
  static Job new_job(const std::string& key, const ParsedKey& parsed, JobOrigin origin, std::int64_t now);
  // `job` queued again from scratch for `origin` (attempts, backoff, outcome cleared).
  static void requeue(Job& job, JobOrigin origin, std::int64_t now);
  void run_sync(Pending item);
  void writer_loop();
  void commit_group(std::vector<Pending>& group);
  void write_usage(const lmdb::Txn& txn, const std::map<std::string, std::int64_t>& usage);
  // One step of the background index scan, in its own transaction (writer thread).
  void index_step();
  static constexpr std::size_t kIndexStep = 20000;
  // Creates a queued job for `key` within the bound, or returns why not.
  // Makes room for a new queued `job` within max_queued_jobs (displacing the lowest-priority
  // queued job when `job` outranks it), or returns why it is refused. Counts either in `counted`.
  std::optional<std::string> admit(JobTxn& jt, const Job& job, QueueTallies& counted);

  QueueLimits limits_;
  std::unique_ptr<CacheWriter> writer_;
  JobDbs dbs_;

  mutable std::mutex state_mu_;  // counts_, tallies_, generation_, transactions_
  QueueCounts counts_;
  QueueTallies tallies_;
  std::uint64_t generation_ = 0;
  std::uint64_t transactions_ = 0;
  std::map<std::string, std::string> meta_dirty_;  // meta values to write (writer thread only)
  std::optional<std::string> scan_;                // index scan position (writer thread only)
  static constexpr std::size_t kParsedKeys = 1 << 16;
  ParsedKeys parses_{kParsedKeys};                 // the jobs' parsed keys (writer thread only)
  bool scan_paused_ = false;                       // a step failed: retried after the next change
  std::atomic<bool> indexing_{false};

  std::mutex usage_mu_;
  std::map<std::string, std::int64_t> usage_pending_;  // full key line -> last use (usage_mu_)

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::vector<Pending> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kd::daemon
