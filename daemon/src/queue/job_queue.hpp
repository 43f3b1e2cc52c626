// The persistent job queue: the daemon's only path to LMDB writes.
//
// Jobs live in memory (for scheduling and status) and in the cache's "jobs" database (one JSON
// record per canonical key line). Every change runs on one writer thread that groups all changes
// pending at the moment into one LMDB write transaction (group commit); a change's completion runs
// only after its transaction committed, so a caller that acknowledges in its completion never
// acknowledges a change that kill -9 can lose. LMDB commits are atomic, so a kill at any moment
// leaves the previous or the next committed state, never half of a record.
//
// On construction, jobs found `running` (the daemon died while searching them) go back to
// `queued` with the interruption noted, in one transaction before the constructor returns.
//
// Thread safety: all public members may be called from any thread. Completions run on the writer
// thread: keep them short (post to an io_context).
#pragma once

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
#include "store/cache_store.hpp"

namespace kd::daemon {

struct MissReport {
  std::string key;  // canonical line
  std::uint64_t count = 1;
};

struct PrewarmRequest {
  std::string key;  // canonical line
  std::string proposer;
  JobBudgets budgets;
};

// Outcome of one committed (or failed) write transaction.
struct CommitResult {
  bool committed = false;
  std::string error;  // the LMDB failure when !committed (e.g. cache full)
};
using Completion = std::function<void(const CommitResult&)>;

struct QueueCounts {
  std::uint64_t by_state[kJobStateCount] = {};
  std::uint64_t total() const noexcept;
};

class JobQueue {
public:
  // Opens (creating) the cache at `cache_dir` as its only writer. Throws kd::Error when the cache
  // cannot be opened (another schema, unwritable directory).
  explicit JobQueue(const std::filesystem::path& cache_dir);
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Adds counts to existing jobs (any state) or creates queued jobs for unseen keys.
  void report_misses(std::vector<MissReport> misses, Completion done);
  // Creates queued jobs, or re-queues failed/cancelled ones; queued/running/done jobs keep their
  // state (a done key needs an explicit evict to be searched again).
  void prewarm(std::vector<PrewarmRequest> requests, Completion done);
  // Marks a queued or running job cancelled. `found` says whether it was queued or running.
  void cancel(std::string key, std::function<void(const CommitResult&, bool found)> done);

  // Synchronous (waits for the commit): the highest-priority queued job whose backoff has passed
  // and that `eligible` accepts, marked running with attempts + 1; nullopt when none.
  std::optional<Job> claim_next(const std::function<bool(const Job&)>& eligible);
  // Synchronous: applies `change` to job `key` (no-op when absent) and commits.
  void update(const std::string& key, const std::function<void(Job&)>& change);
  // Synchronous: publishes a winner record (commit + generation bump) and marks job `key` done in
  // the same writer cycle. Returns the new generation. Throws kd::Error on LMDB failure.
  std::uint64_t publish(const std::string& key, const Record& record);
  // Synchronous: stores a search tree (JSON) under its search id in the `trees` database, so
  // `kdctl show` can explain the job's outcome whether or not it published.
  void store_tree(const std::string& search_id, std::string tree_json);
  // Stores `value` under `key` in the cache's `meta` database, in the same group commit as the job
  // changes pending with it; `done` runs after the commit. `key` must not be one of the cache's
  // own ("schema", "generation").
  void put_meta(std::string key, std::string value, Completion done);
  // Synchronous: the `meta` value under `key`, nullopt when absent. Throws kd::Error on LMDB failure.
  std::optional<std::string> get_meta(const std::string& key);

  // Re-reads the cache's generation, which another process may have bumped (kdctl import and
  // evict write the cache themselves), and keeps the larger of it and the known one. `done` runs
  // on the writer thread with the generation before and after.
  void sync_generation(std::function<void(const CommitResult&, std::uint64_t before, std::uint64_t after)> done);

  QueueCounts counts() const;
  std::optional<Job> find(const std::string& key) const;
  std::vector<Job> jobs() const;
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
  void writer_loop();
  void commit_group(std::vector<Pending>& group);
  void record_change(Job& job);

  std::unique_ptr<CacheWriter> writer_;
  MDB_dbi jobs_dbi_ = 0;
  MDB_dbi meta_dbi_ = 0;

  mutable std::mutex table_mu_;
  std::map<std::string, Job, std::less<>> table_;
  std::vector<std::string> dirty_;  // keys changed by the ops being applied (writer thread only)
  std::map<std::string, std::string> meta_dirty_;  // meta values to write (writer thread only)
  std::uint64_t generation_ = 0;
  std::uint64_t transactions_ = 0;

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::vector<Pending> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kd::daemon
