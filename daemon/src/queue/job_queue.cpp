#include "queue/job_queue.hpp"

#include "queue/miss_buckets.hpp"

#include <algorithm>
#include <future>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "queue/record_eviction.hpp"
#include "store/record_usage.hpp"

namespace kd::daemon {
namespace {

constexpr const char* kMetaDb = "meta";

bool finished(JobState s) {
  return s == JobState::done || s == JobState::failed || s == JobState::cancelled;
}

}  // namespace

std::uint64_t PurgeResult::total() const noexcept {
  std::uint64_t n = 0;
  for (const auto v : by_state) n += v;
  return n;
}

// One change: either a job op (grouped with its neighbours into one transaction) or an exclusive
// op that needs the CacheWriter itself (runs alone, after the group before it commits).
struct JobQueue::Pending {
  // Runs inside the group's write transaction; what it counts is added after the commit.
  std::function<void(JobTxn&, QueueTallies&)> apply;
  std::function<void(CacheWriter&)> exclusive;
  Completion done;
};

JobQueue::JobQueue(const std::filesystem::path& cache_dir, QueueLimits limits)
    : limits_(limits), writer_(std::make_unique<CacheWriter>(cache_dir)) {
  lmdb::Txn txn(writer_->env(), lmdb::Access::read_write);
  dbs_ = open_job_dbs(txn);
  if (auto stored = stored_counts(txn, dbs_)) {
    counts_ = *stored;
    scan_ = index_scan_position(txn, dbs_);
  } else {
    counts_ = start_index_scan(txn, dbs_);
    scan_ = std::string();
  }
  if (scan_)
    spdlog::info("job queue: indexing the jobs of {} in the background (once: the cache has no "
                 "complete job index)", cache_dir.string());
  indexing_ = scan_.has_value();
  JobTxn jt(txn, dbs_, counts_, scan_);
  const auto running = running_jobs(txn, dbs_);
  for (const Job& before : running) {
    Job job = before;
    job.state = JobState::queued;
    job.reason = "interrupted by a daemon restart; resumed";
    job.updated_unix_ms = unix_ms_now();
    jt.put(job, before);
  }
  jt.write_counts();
  txn.commit();
  counts_ = jt.counts();
  if (counts_.unreadable > 0) spdlog::warn("job queue: {} unreadable job records kept", counts_.unreadable);
  spdlog::info("job queue: {} jobs in {} ({} queued), {} interrupted jobs resumed", counts_.total(),
               cache_dir.string(), counts_.of(JobState::queued), running.size());
  generation_ = writer_->generation();
  thread_ = std::thread([this] { writer_loop(); });
}

JobQueue::~JobQueue() { stop(); }

const lmdb::Env& JobQueue::cache_env() const { return writer_->env(); }

void JobQueue::stop() {
  {
    const std::lock_guard lock(pending_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  pending_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void JobQueue::submit(Pending item) {
  {
    const std::lock_guard lock(pending_mu_);
    if (!stopping_) {
      pending_.push_back(std::move(item));
      pending_cv_.notify_one();
      return;
    }
  }
  if (item.done) item.done(CommitResult{false, "the daemon is shutting down"});
}

// Submits `item` and waits for its commit; throws kd::Error when it did not commit.
void JobQueue::run_sync(Pending item) {
  std::promise<CommitResult> committed;
  item.done = [&](const CommitResult& r) { committed.set_value(r); };
  submit(std::move(item));
  const CommitResult r = committed.get_future().get();
  if (!r.committed) throw Error(ErrorDomain::lmdb, 0, "job queue: " + r.error);
}

void JobQueue::writer_loop() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(pending_mu_);
      pending_cv_.wait(lock, [&] { return stopping_ || !pending_.empty() || (scan_ && !scan_paused_); });
      if (pending_.empty() && stopping_) return;  // stopping and drained (a scan resumes next time)
      batch.swap(pending_);
    }
    std::vector<Pending> group;
    for (auto& item : batch) {
      if (!item.exclusive) {
        group.push_back(std::move(item));
        continue;
      }
      commit_group(group);
      CommitResult result{true, {}};
      try {
        item.exclusive(*writer_);
      } catch (const std::exception& e) {
        result = CommitResult{false, e.what()};
      }
      if (item.done) item.done(result);
    }
    commit_group(group);
    if (!batch.empty()) scan_paused_ = false;
    if (scan_ && !scan_paused_) index_step();
  }
}

void JobQueue::index_step() {
  try {
    lmdb::Txn txn(writer_->env(), lmdb::Access::read_write);
    JobTxn jt(txn, dbs_, counts(), scan_);
    const bool done = jt.index_step(kIndexStep);
    jt.write_counts();
    txn.commit();
    {
      const std::lock_guard lock(state_mu_);
      counts_ = jt.counts();
      ++transactions_;
    }
    scan_ = jt.scan_position();
    if (done) {
      indexing_ = false;
      spdlog::info("job queue: {} jobs indexed ({} queued)", counts_.total(), counts_.of(JobState::queued));
    }
  } catch (const std::exception& e) {
    // Retried after the next change; the jobs indexed so far stay usable.
    spdlog::error("job queue: indexing step failed: {}", e.what());
    scan_paused_ = true;
  }
}

void JobQueue::commit_group(std::vector<Pending>& group) {
  if (group.empty()) return;
  CommitResult result{true, {}};
  try {
    lmdb::Txn txn(writer_->env(), lmdb::Access::read_write);
    QueueCounts base;
    {
      const std::lock_guard lock(state_mu_);
      base = counts_;
    }
    JobTxn jt(txn, dbs_, base, scan_);
    QueueTallies counted;
    for (auto& item : group) item.apply(jt, counted);
    for (const auto& [key, value] : meta_dirty_) lmdb::put(txn, dbs_.meta, key, value);
    jt.write_counts();
    txn.commit();
    const std::lock_guard lock(state_mu_);
    counts_ = jt.counts();
    tallies_.jobs_dropped += counted.jobs_dropped;
    tallies_.jobs_purged += counted.jobs_purged;
    ++transactions_;
  } catch (const std::exception& e) {
    // Nothing of the transaction was written, and nothing was acknowledged for its changes.
    spdlog::error("job queue: write transaction of {} changes failed: {}", group.size(), e.what());
    result = CommitResult{false, e.what()};
  }
  meta_dirty_.clear();
  for (auto& item : group)
    if (item.done) item.done(result);
  group.clear();
}

std::optional<std::string> JobQueue::admit(JobTxn& jt, const Job& job, QueueTallies& counted) {
  if (jt.counts().of(JobState::queued) < limits_.max_queued_jobs) return std::nullopt;
  ++counted.jobs_dropped;  // the new job, or the one it displaces
  const auto lowest = lowest_queued(jt.txn(), jt.dbs());
  if (!lowest || lowest->priority() >= job.priority())
    return fmt::format("the queue holds max_queued_jobs = {} jobs, none of lower priority",
                       limits_.max_queued_jobs);
  jt.erase(*lowest);
  return std::nullopt;
}

const std::string& JobQueue::job_key_of_miss(const std::string& line) {
  thread_local std::string bucket;  // the writer thread's; valid until the next call
  auto ranged = bucket_line(line, limits_.buckets);
  if (!ranged) return line;
  bucket = std::move(*ranged);
  return bucket;
}

bool JobQueue::record_gone(JobTxn& jt, const Job& job, const ParsedKey& parsed) {
  const std::optional<DevicePart>* device = parsed.device();
  return job.state == JobState::done && device != nullptr && device->has_value() &&
         !lmdb::get(jt.txn(), jt.dbs().records, job.key);
}

Job JobQueue::new_job(const std::string& key, const ParsedKey& parsed, JobOrigin origin, std::int64_t now) {
  Job job;
  job.key = key;
  job.created_unix_ms = now;
  job.updated_unix_ms = now;
  job.est_call_us = estimate_call_us(parsed);
  job.origin = origin;
  return job;
}

void JobQueue::requeue(Job& job, JobOrigin origin, std::int64_t now) {
  job.state = JobState::queued;
  job.attempts = 0;
  job.not_before_unix_ms = 0;
  job.published_generation = 0;
  job.reason.clear();
  job.origin = origin;
  job.updated_unix_ms = now;
}

void JobQueue::report_misses(std::vector<MissReport> misses, Completion done) {
  Pending p;
  p.done = std::move(done);
  p.apply = [this, misses = std::move(misses)](JobTxn& jt, QueueTallies& counted) {
    const auto now = unix_ms_now();
    for (const auto& m : misses) {
      if (m.key.empty() || m.key.size() > kMaxJobKeyBytes) continue;
      const std::string& key = job_key_of_miss(m.key);  // issue 29: its bucket's range
      // A key's first miss brings its parse, kept for claims; a bucket's range is parsed here once.
      const ParsedKey parsed = key == m.key ? parses_.of(m.key, m.parsed) : parses_.of(key);
      const auto before = jt.get(key);
      // Searched before, and its record (a kernel or a vendor verdict) is gone: evicted, or a
      // search that ended without one before verdicts. A call needs it again: search it again.
      const bool again = before && record_gone(jt, *before, parsed);
      Job job;
      if (before) {
        job = *before;
        if (again) requeue(job, JobOrigin::miss, now);
      } else {
        job = new_job(key, parsed, JobOrigin::miss, now);
      }
      job.count += m.count;
      job.updated_unix_ms = now;
      if ((!before || again) && admit(jt, job, counted)) continue;
      jt.put(job, before);
    }
  };
  submit(std::move(p));
}

void JobQueue::prewarm(std::vector<PrewarmRequest> requests, PrewarmDone done) {
  auto refused = std::make_shared<std::vector<Refused>>();
  Pending p;
  p.apply = [this, requests = std::move(requests), refused](JobTxn& jt, QueueTallies& counted) {
    const auto now = unix_ms_now();
    for (const auto& r : requests) {
      if (r.key.empty() || r.key.size() > kMaxJobKeyBytes) {
        refused->push_back({r.key, fmt::format("key of {} bytes: at most {}", r.key.size(), kMaxJobKeyBytes)});
        continue;
      }
      if (r.parsed.parsed()) parses_.of(r.key, r.parsed);
      const auto before = jt.get(r.key);
      Job job;
      if (!before) {
        job = new_job(r.key, parses_.of(r.key), JobOrigin::prewarm, now);
        if (lmdb::get(jt.txn(), jt.dbs().records, r.key)) {
          // Tuned before (its job was purged): nothing to search.
          job.state = JobState::done;
          job.reason = "already in the cache";
          job.updated_unix_ms = now;
          jt.put(job, before);
          continue;
        }
      } else if ((before->state == JobState::queued || before->state == JobState::running) &&
                 before->origin == JobOrigin::miss) {
        // Queued or being searched for a miss, and now asked for: searched at the prewarm's share
        // of the GPU (a running search reads its job's origin before each pause:
        // Progress::duty_cycle_now), and a queued one with the prewarm's proposer and budgets.
        job = *before;
        job.origin = JobOrigin::prewarm;
        if (before->state == JobState::queued) {
          if (!r.proposer.empty()) job.proposer = r.proposer;
          if (r.budgets != JobBudgets{}) job.budgets = r.budgets;
        }
        job.updated_unix_ms = now;
        jt.put(job, before);
        continue;
      } else if (before->state != JobState::failed && before->state != JobState::cancelled &&
                 !record_gone(jt, *before, parses_.of(r.key))) {
        continue;  // queued, running, or done with its record in the cache
      } else {
        job = *before;
      }
      requeue(job, JobOrigin::prewarm, now);
      job.proposer = r.proposer;
      job.budgets = r.budgets;
      if (auto why = admit(jt, job, counted)) {
        refused->push_back({r.key, std::move(*why)});
        continue;
      }
      jt.put(job, before);
    }
  };
  p.done = [refused, done = std::move(done)](const CommitResult& r) { done(r, *refused); };
  submit(std::move(p));
}

void JobQueue::cancel(std::string key, std::function<void(const CommitResult&, bool)> done) {
  auto found = std::make_shared<bool>(false);
  Pending p;
  p.apply = [key = std::move(key), found](JobTxn& jt, QueueTallies&) {
    const auto before = jt.get(key);
    if (!before || (before->state != JobState::queued && before->state != JobState::running)) return;
    Job job = *before;
    job.state = JobState::cancelled;
    job.reason = "cancelled by a client";
    job.updated_unix_ms = unix_ms_now();
    *found = true;
    jt.put(job, before);
  };
  p.done = [found, done = std::move(done)](const CommitResult& r) { done(r, *found); };
  submit(std::move(p));
}

std::optional<Job> JobQueue::claim_next(const std::function<bool(const Job&)>& eligible) {
  std::optional<Job> claimed;
  Pending p;
  p.apply = [&](JobTxn& jt, QueueTallies&) {
    const auto now = unix_ms_now();
    std::optional<Job> best;
    for_each_queued(jt.txn(), jt.dbs(), [&](Job& job) {
      if (job.not_before_unix_ms > now) return true;
      job.parsed = parses_.of(job.key);
      if (!eligible(job)) return true;
      best = std::move(job);
      return false;
    });
    if (!best) return;
    Job job = *best;
    job.state = JobState::running;
    ++job.attempts;
    job.updated_unix_ms = now;
    jt.put(job, best);
    claimed = std::move(job);
  };
  try {
    run_sync(std::move(p));
  } catch (const Error&) {
    return std::nullopt;
  }
  return claimed;
}

void JobQueue::update(const std::string& key, const std::function<void(Job&)>& change) {
  Pending p;
  p.apply = [&](JobTxn& jt, QueueTallies&) {
    const auto before = jt.get(key);
    if (!before) return;
    Job job = *before;
    change(job);
    job.updated_unix_ms = unix_ms_now();
    jt.put(job, before);
  };
  try {
    run_sync(std::move(p));
  } catch (const Error& e) {
    throw Error(ErrorDomain::lmdb, 0, "job queue: update of " + key + ": " + e.what());
  }
}

std::uint64_t JobQueue::commit_winner(const std::string& key, const Record& record, std::string reason) {
  std::uint64_t generation = 0;
  Pending p;
  p.exclusive = [&](CacheWriter& w) {
    generation = w.commit_record(record);
    const std::lock_guard lock(state_mu_);
    generation_ = generation;
  };
  try {
    run_sync(std::move(p));
  } catch (const Error& e) {
    throw Error(ErrorDomain::lmdb, 0, "commit the winner of " + key + ": " + e.what());
  }
  note_usage({record.key_line}, unix_ms_now());
  // A kill between the two commits leaves the record committed and the job running: the restart
  // resumes the job, whose search then finds its own winner cached. Nothing is half-written.
  update(key, [&](Job& job) {
    job.state = JobState::done;
    job.published_generation = generation;
    job.reason = std::move(reason);
  });
  return generation;
}

std::size_t JobQueue::requeue_stale_verdicts(int search_version) {
  // A verdict is a few hundred bytes; kernels and algorithms are far larger and never decoded here.
  constexpr std::size_t kMaxVerdictBytes = 4096;
  std::vector<std::string> stale;
  {
    const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
    lmdb::for_each(txn, dbs_.records, [&](std::string_view key, std::string_view value) {
      if (value.size() > kMaxVerdictBytes) return;
      const auto decoded = deserialize_record(value);
      const auto* r = std::get_if<Record>(&decoded);
      if (r != nullptr && r->kind == RecordKind::vendor && r->search_version < search_version)
        stale.emplace_back(key);
    });
  }
  if (stale.empty()) return 0;
  std::size_t queued = 0;
  Pending p;
  p.apply = [&](JobTxn& jt, QueueTallies& counted) {
    const auto now = unix_ms_now();
    for (const std::string& key : stale) {
      if (key.size() > kMaxJobKeyBytes) continue;
      const auto before = jt.get(key);
      if (before && (before->state == JobState::queued || before->state == JobState::running)) continue;
      Job job = before ? *before : new_job(key, parses_.of(key), JobOrigin::miss, now);
      requeue(job, JobOrigin::miss, now);
      job.reason = "searched again: its vendor verdict came from an older search";
      if (admit(jt, job, counted)) continue;
      jt.put(job, before);
      ++queued;
    }
  };
  run_sync(std::move(p));
  return queued;
}

void JobQueue::store_tree(const std::string& search_id, std::string tree_json) {
  Pending p;
  p.exclusive = [&](CacheWriter& w) { w.put_raw("trees", search_id, tree_json); };
  try {
    run_sync(std::move(p));
  } catch (const Error& e) {
    throw Error(ErrorDomain::lmdb, 0, "store tree " + search_id + ": " + e.what());
  }
}

void JobQueue::put_meta(std::string key, std::string value, Completion done) {
  Pending p;
  p.apply = [this, key = std::move(key), value = std::move(value)](JobTxn&, QueueTallies&) mutable {
    meta_dirty_[key] = std::move(value);  // a later value of the same key wins
  };
  p.done = std::move(done);
  submit(std::move(p));
}

std::optional<std::string> JobQueue::get_meta(const std::string& key) {
  std::optional<std::string> value;
  Pending p;
  p.exclusive = [&](CacheWriter& w) { value = w.get_raw(kMetaDb, key); };
  try {
    run_sync(std::move(p));
  } catch (const Error& e) {
    throw Error(ErrorDomain::lmdb, 0, "read meta " + key + ": " + e.what());
  }
  return value;
}

void JobQueue::sync_generation(
    std::function<void(const CommitResult&, std::uint64_t before, std::uint64_t after)> done) {
  auto seen = std::make_shared<std::pair<std::uint64_t, std::uint64_t>>();
  submit(Pending{{},
                 [this, seen](CacheWriter& w) {
                   const std::uint64_t stored = w.generation();
                   const std::lock_guard lock(state_mu_);
                   seen->first = generation_;
                   generation_ = std::max(generation_, stored);
                   seen->second = generation_;
                 },
                 [seen, done = std::move(done)](const CommitResult& r) {
                   if (done) done(r, seen->first, seen->second);
                 }});
}

namespace {
bool stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }
}  // namespace

PurgeResult JobQueue::purge(const PurgeRequest& request, const std::atomic<bool>* stop) {
  PurgeResult result;
  static const std::vector<JobState> kFinished{JobState::done, JobState::failed, JobState::cancelled};
  for (const JobState s : request.states.empty() ? kFinished : request.states) {
    if (!finished(s)) continue;
    const auto i = static_cast<std::size_t>(s);
    if (request.mode == PurgeRequest::Mode::count_only) {
      // Reads the index from its oldest end up to the cutoff, nothing more.
      const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
      result.by_state[i] = count_finished_before(txn, dbs_, s, request.before_unix_ms);
      continue;
    }
    for (;;) {
      std::size_t removed = 0;
      Pending p;
      p.apply = [&](JobTxn& jt, QueueTallies& counted) {
        removed = 0;
        for (const Job& job : finished_before(jt.txn(), jt.dbs(), s, request.before_unix_ms, kPurgeBatch)) {
          jt.erase(job);
          ++removed;
        }
        counted.jobs_purged += removed;
      };
      run_sync(std::move(p));
      result.by_state[i] += removed;
      if (removed < kPurgeBatch || stopped(stop)) break;
    }
  }
  return result;
}

void JobQueue::note_usage(const std::vector<std::string>& full_key_lines, std::int64_t unix_ms) {
  std::uint64_t dropped = 0;
  {
    const std::lock_guard lock(usage_mu_);
    for (const auto& key : full_key_lines) {
      if (key.empty() || key.size() > kMaxJobKeyBytes) continue;
      const auto it = usage_pending_.find(key);
      if (it != usage_pending_.end()) {
        it->second = std::max(it->second, unix_ms);
      } else if (usage_pending_.size() < kMaxPendingUsage) {
        usage_pending_.emplace(key, unix_ms);
      } else {
        ++dropped;
      }
    }
  }
  if (dropped > 0) {
    const std::lock_guard lock(state_mu_);
    tallies_.usage_dropped += dropped;
  }
}

void JobQueue::write_usage(const lmdb::Txn& txn, const std::map<std::string, std::int64_t>& usage) {
  for (const auto& [key, ms] : usage) {
    if (!lmdb::get(txn, dbs_.records, key)) continue;  // no such record: nothing to remember
    const auto stored = lmdb::get(txn, dbs_.usage, key);
    const auto before = stored ? decode_usage(*stored) : std::nullopt;
    if (before && *before >= ms) continue;
    lmdb::put(txn, dbs_.usage, key, encode_usage(ms));
  }
}

void JobQueue::flush_usage() {
  auto usage = std::make_shared<std::map<std::string, std::int64_t>>();
  {
    const std::lock_guard lock(usage_mu_);
    usage->swap(usage_pending_);
  }
  if (usage->empty()) return;
  Pending p;
  p.apply = [this, usage](JobTxn& jt, QueueTallies&) { write_usage(jt.txn(), *usage); };
  run_sync(std::move(p));
}

std::uint64_t JobQueue::records_bytes() const {
  const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
  return db_bytes(txn, dbs_.records);
}

EvictionResult JobQueue::evict_lru(std::uint64_t max_bytes, std::uint64_t target_bytes,
                                   const std::function<void(std::uint64_t, std::uint64_t)>& on_batch,
                                   const std::atomic<bool>* stop) {
  EvictionResult result;
  std::vector<EvictionCandidate> plan;
  {
    const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
    result.bytes_before = result.bytes_after = db_bytes(txn, dbs_.records);
    if (result.bytes_before <= max_bytes) return result;
    plan = lru_order(txn, dbs_);  // a snapshot: the writer goes on meanwhile
  }
  std::size_t next = 0;
  while (next < plan.size() && !stopped(stop)) {
    std::uint64_t removed = 0;
    std::optional<std::uint64_t> generation;
    Pending p;
    p.exclusive = [&](CacheWriter& w) {
      QueueCounts base;
      {
        const std::lock_guard lock(state_mu_);
        base = counts_;
      }
      QueueCounts after = base;
      generation = w.write_records([&](const lmdb::Txn& txn) {
        JobTxn jt(txn, dbs_, base, scan_);
        removed = evict_some(jt, plan, next, target_bytes, kEvictBatch);
        jt.write_counts();
        after = jt.counts();
        return removed > 0;
      });
      const std::lock_guard lock(state_mu_);
      counts_ = after;
      tallies_.records_evicted += removed;
      if (generation) generation_ = *generation;
      ++transactions_;
    };
    run_sync(std::move(p));
    if (removed == 0) break;  // under the target, or nothing left that may go
    result.records += removed;
    result.generation = *generation;
    if (on_batch) on_batch(*generation, removed);
  }
  result.bytes_after = records_bytes();
  return result;
}

QueueCounts JobQueue::counts() const {
  const std::lock_guard lock(state_mu_);
  return counts_;
}

QueueTallies JobQueue::tallies() const {
  const std::lock_guard lock(state_mu_);
  return tallies_;
}

std::optional<Job> JobQueue::find(const std::string& key) const {
  const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
  return get_job(txn, dbs_, key);
}

std::vector<std::optional<Job>> JobQueue::find_each(const std::vector<std::string>& keys) const {
  std::vector<std::optional<Job>> out;
  out.reserve(keys.size());
  if (keys.empty()) return out;
  const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
  for (const auto& key : keys) out.push_back(get_job(txn, dbs_, key));
  return out;
}

std::vector<Job> JobQueue::top_jobs(std::size_t n) const {
  std::vector<Job> out;
  if (n == 0) return out;
  const lmdb::Txn txn(writer_->env(), lmdb::Access::read_only);
  for_each_queued(txn, dbs_, [&](Job& j) {
    out.push_back(std::move(j));
    return out.size() < n;
  });
  for (Job& j : running_jobs(txn, dbs_)) {
    if (out.size() >= n) return out;
    out.push_back(std::move(j));
  }
  std::vector<Job> recent;
  for (const JobState s : {JobState::done, JobState::failed, JobState::cancelled}) {
    auto some = latest_finished(txn, dbs_, s, n - out.size());
    recent.insert(recent.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
  }
  std::stable_sort(recent.begin(), recent.end(),
                   [](const Job& a, const Job& b) { return a.updated_unix_ms > b.updated_unix_ms; });
  for (Job& j : recent) {
    if (out.size() >= n) break;
    out.push_back(std::move(j));
  }
  return out;
}

std::uint64_t JobQueue::generation() const {
  const std::lock_guard lock(state_mu_);
  return generation_;
}

std::uint64_t JobQueue::transactions_committed() const {
  const std::lock_guard lock(state_mu_);
  return transactions_;
}

}  // namespace kd::daemon
