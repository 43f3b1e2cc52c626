#include "queue/job_queue.hpp"

#include <algorithm>
#include <future>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/error.hpp"

namespace kd::daemon {
namespace {

constexpr const char* kJobsDb = "jobs";
constexpr const char* kMetaDb = "meta";

}  // namespace

std::uint64_t QueueCounts::total() const noexcept {
  std::uint64_t n = 0;
  for (const auto v : by_state) n += v;
  return n;
}

// One change: either a table op (grouped with its neighbours into one transaction) or an
// exclusive op that needs the CacheWriter itself (runs alone, after the group before it commits).
struct JobQueue::Pending {
  std::function<void()> apply;               // runs with table_mu_ held; calls record_change
  std::function<void(CacheWriter&)> exclusive;
  Completion done;
};

JobQueue::JobQueue(const std::filesystem::path& cache_dir)
    : writer_(std::make_unique<CacheWriter>(cache_dir)) {
  {
    lmdb::Txn txn(writer_->env(), lmdb::Access::read_write);
    jobs_dbi_ = *lmdb::open_db(txn, kJobsDb, /*create=*/true);
    meta_dbi_ = *lmdb::open_db(txn, kMetaDb, /*create=*/true);
    std::size_t damaged = 0, resumed = 0;
    std::vector<std::pair<std::string, std::string>> rewrites;
    lmdb::for_each(txn, jobs_dbi_, [&](std::string_view key, std::string_view value) {
      auto job = parse_job(key, value);
      if (!job) {
        ++damaged;
        return;
      }
      if (job->state == JobState::running) {
        job->state = JobState::queued;
        job->reason = "interrupted by a daemon restart; resumed";
        job->updated_unix_ms = unix_ms_now();
        rewrites.emplace_back(job->key, serialize_job(*job));
        ++resumed;
      }
      table_.emplace(job->key, std::move(*job));
    });
    for (const auto& [key, text] : rewrites) lmdb::put(txn, jobs_dbi_, key, text);
    txn.commit();
    if (damaged > 0) spdlog::warn("job queue: skipped {} unreadable job records", damaged);
    spdlog::info("job queue: {} jobs loaded from {}, {} interrupted jobs resumed", table_.size(),
                 cache_dir.string(), resumed);
  }
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

void JobQueue::writer_loop() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(pending_mu_);
      pending_cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping and drained
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
  }
}

void JobQueue::record_change(Job& job) {
  job.updated_unix_ms = unix_ms_now();
  dirty_.push_back(job.key);
}

void JobQueue::commit_group(std::vector<Pending>& group) {
  if (group.empty()) return;
  std::vector<std::pair<std::string, std::string>> records;
  std::map<std::string, std::string> meta;
  {
    const std::lock_guard lock(table_mu_);
    for (auto& item : group) item.apply();
    std::sort(dirty_.begin(), dirty_.end());
    dirty_.erase(std::unique(dirty_.begin(), dirty_.end()), dirty_.end());
    records.reserve(dirty_.size());
    for (const auto& key : dirty_) records.emplace_back(key, serialize_job(table_.at(key)));
    dirty_.clear();
    meta.swap(meta_dirty_);
  }
  CommitResult result{true, {}};
  try {
    lmdb::Txn txn(writer_->env(), lmdb::Access::read_write);
    for (const auto& [key, text] : records) lmdb::put(txn, jobs_dbi_, key, text);
    for (const auto& [key, value] : meta) lmdb::put(txn, meta_dbi_, key, value);
    txn.commit();
    const std::lock_guard lock(table_mu_);
    ++transactions_;
  } catch (const std::exception& e) {
    // The in-memory table is ahead of LMDB now; nothing was acknowledged for these changes, and a
    // restart reloads the committed state.
    spdlog::error("job queue: write transaction of {} records failed: {}", records.size(), e.what());
    result = CommitResult{false, e.what()};
  }
  for (auto& item : group)
    if (item.done) item.done(result);
  group.clear();
}

void JobQueue::report_misses(std::vector<MissReport> misses, Completion done) {
  submit(Pending{[this, misses = std::move(misses)] {
                   const auto now = unix_ms_now();
                   for (const auto& m : misses) {
                     auto [it, inserted] = table_.try_emplace(m.key);
                     Job& job = it->second;
                     if (inserted) {
                       job.key = m.key;
                       job.created_unix_ms = now;
                       job.est_call_us = estimate_call_us(m.key);
                     }
                     job.count += m.count;
                     record_change(job);
                   }
                 },
                 {}, std::move(done)});
}

void JobQueue::prewarm(std::vector<PrewarmRequest> requests, Completion done) {
  submit(Pending{[this, requests = std::move(requests)] {
                   const auto now = unix_ms_now();
                   for (const auto& r : requests) {
                     auto [it, inserted] = table_.try_emplace(r.key);
                     Job& job = it->second;
                     if (inserted) {
                       job.key = r.key;
                       job.created_unix_ms = now;
                       job.est_call_us = estimate_call_us(r.key);
                     } else if (job.state != JobState::failed && job.state != JobState::cancelled) {
                       continue;
                     }
                     job.state = JobState::queued;
                     job.attempts = 0;
                     job.not_before_unix_ms = 0;
                     job.reason.clear();
                     job.proposer = r.proposer;
                     job.budgets = r.budgets;
                     record_change(job);
                   }
                 },
                 {}, std::move(done)});
}

void JobQueue::cancel(std::string key, std::function<void(const CommitResult&, bool)> done) {
  auto found = std::make_shared<bool>(false);
  submit(Pending{[this, key = std::move(key), found] {
                   const auto it = table_.find(key);
                   if (it == table_.end()) return;
                   Job& job = it->second;
                   if (job.state != JobState::queued && job.state != JobState::running) return;
                   job.state = JobState::cancelled;
                   job.reason = "cancelled by a client";
                   *found = true;
                   record_change(job);
                 },
                 {},
                 [found, done = std::move(done)](const CommitResult& r) { done(r, *found); }});
}

std::optional<Job> JobQueue::claim_next(const std::function<bool(const Job&)>& eligible) {
  std::optional<Job> claimed;
  std::promise<CommitResult> committed;
  submit(Pending{[&] {
                   const auto now = unix_ms_now();
                   Job* best = nullptr;
                   for (auto& [key, job] : table_) {
                     if (job.state != JobState::queued || job.not_before_unix_ms > now) continue;
                     if (!eligible(job)) continue;
                     if (best == nullptr || job.priority() > best->priority()) best = &job;
                   }
                   if (best == nullptr) return;
                   best->state = JobState::running;
                   ++best->attempts;
                   record_change(*best);
                   claimed = *best;
                 },
                 {}, [&](const CommitResult& r) { committed.set_value(r); }});
  const CommitResult r = committed.get_future().get();
  if (!r.committed) return std::nullopt;
  return claimed;
}

void JobQueue::update(const std::string& key, const std::function<void(Job&)>& change) {
  std::promise<CommitResult> committed;
  submit(Pending{[&] {
                   const auto it = table_.find(key);
                   if (it == table_.end()) return;
                   change(it->second);
                   record_change(it->second);
                 },
                 {}, [&](const CommitResult& r) { committed.set_value(r); }});
  const CommitResult r = committed.get_future().get();
  if (!r.committed) throw Error(ErrorDomain::lmdb, 0, "job queue: update of " + key + ": " + r.error);
}

std::uint64_t JobQueue::publish(const std::string& key, const Record& record) {
  std::uint64_t generation = 0;
  std::promise<CommitResult> published;
  submit(Pending{{},
                 [&](CacheWriter& w) {
                   generation = w.publish(record);
                   const std::lock_guard lock(table_mu_);
                   generation_ = generation;
                 },
                 [&](const CommitResult& r) { published.set_value(r); }});
  const CommitResult r = published.get_future().get();
  if (!r.committed) throw Error(ErrorDomain::lmdb, 0, "publish " + key + ": " + r.error);
  // A kill between the two commits leaves the record published and the job running: the restart
  // resumes the job, whose search then finds its own winner cached. Nothing is half-written.
  update(key, [&](Job& job) {
    job.state = JobState::done;
    job.published_generation = generation;
    job.reason.clear();
  });
  return generation;
}

void JobQueue::store_tree(const std::string& search_id, std::string tree_json) {
  std::promise<CommitResult> stored;
  submit(Pending{{},
                 [&](CacheWriter& w) { w.put_raw("trees", search_id, tree_json); },
                 [&](const CommitResult& r) { stored.set_value(r); }});
  const CommitResult r = stored.get_future().get();
  if (!r.committed) throw Error(ErrorDomain::lmdb, 0, "store tree " + search_id + ": " + r.error);
}

void JobQueue::put_meta(std::string key, std::string value, Completion done) {
  submit(Pending{[this, key = std::move(key), value = std::move(value)]() mutable {
                   meta_dirty_[key] = std::move(value);  // a later value of the same key wins
                 },
                 {}, std::move(done)});
}

std::optional<std::string> JobQueue::get_meta(const std::string& key) {
  std::optional<std::string> value;
  std::promise<CommitResult> read;
  submit(Pending{{},
                 [&](CacheWriter& w) { value = w.get_raw(kMetaDb, key); },
                 [&](const CommitResult& r) { read.set_value(r); }});
  const CommitResult r = read.get_future().get();
  if (!r.committed) throw Error(ErrorDomain::lmdb, 0, "read meta " + key + ": " + r.error);
  return value;
}

void JobQueue::sync_generation(
    std::function<void(const CommitResult&, std::uint64_t before, std::uint64_t after)> done) {
  auto seen = std::make_shared<std::pair<std::uint64_t, std::uint64_t>>();
  submit(Pending{{},
                 [this, seen](CacheWriter& w) {
                   const std::uint64_t stored = w.generation();
                   const std::lock_guard lock(table_mu_);
                   seen->first = generation_;
                   generation_ = std::max(generation_, stored);
                   seen->second = generation_;
                 },
                 [seen, done = std::move(done)](const CommitResult& r) {
                   if (done) done(r, seen->first, seen->second);
                 }});
}

QueueCounts JobQueue::counts() const {
  QueueCounts c;
  const std::lock_guard lock(table_mu_);
  for (const auto& [key, job] : table_) ++c.by_state[static_cast<std::size_t>(job.state)];
  return c;
}

std::optional<Job> JobQueue::find(const std::string& key) const {
  const std::lock_guard lock(table_mu_);
  const auto it = table_.find(key);
  if (it == table_.end()) return std::nullopt;
  return it->second;
}

std::vector<Job> JobQueue::jobs() const {
  const std::lock_guard lock(table_mu_);
  std::vector<Job> out;
  out.reserve(table_.size());
  for (const auto& [key, job] : table_) out.push_back(job);
  return out;
}

std::uint64_t JobQueue::generation() const {
  const std::lock_guard lock(table_mu_);
  return generation_;
}

std::uint64_t JobQueue::transactions_committed() const {
  const std::lock_guard lock(table_mu_);
  return transactions_;
}

}  // namespace kd::daemon
