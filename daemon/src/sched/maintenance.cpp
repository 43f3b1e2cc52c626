#include "sched/maintenance.hpp"

#include <spdlog/spdlog.h>

namespace kd::daemon {
namespace {

// After a publish, wait this long for more before the pass: a prewarm publishes in bursts.
constexpr std::chrono::milliseconds kPokeDelay{200};

}  // namespace

Maintenance::Maintenance(const Config& config, JobQueue& queue, EvictedFn on_evicted)
    : config_(config), queue_(queue), on_evicted_(std::move(on_evicted)) {}

Maintenance::~Maintenance() { stop(); }

void Maintenance::start() {
  thread_ = std::thread([this] { loop(); });
}

void Maintenance::stop() {
  std::deque<std::pair<PurgeRequest, PurgeDone>> left;
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    stop_work_ = true;
    left.swap(purges_);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& [request, done] : left) done(std::nullopt, "the daemon is shutting down");
}

void Maintenance::poke() {
  {
    const std::lock_guard lock(mu_);
    poked_ = true;
  }
  cv_.notify_all();
}

void Maintenance::purge(PurgeRequest request, PurgeDone done) {
  {
    const std::lock_guard lock(mu_);
    if (!stopping_) {
      purges_.emplace_back(std::move(request), std::move(done));
      cv_.notify_all();
      return;
    }
  }
  done(std::nullopt, "the daemon is shutting down");
}

Maintenance::PassResult Maintenance::run_pass() {
  PassResult r;
  queue_.flush_usage();
  if (config_.job_retention.count() > 0) {
    PurgeRequest expired;
    expired.before_unix_ms =
        unix_ms_now() - std::chrono::duration_cast<std::chrono::milliseconds>(config_.job_retention).count();
    r.purged = queue_.purge(expired, &stop_work_);
    if (r.purged.total() > 0)
      spdlog::info("purged {} finished jobs older than {} s", r.purged.total(), config_.job_retention.count());
  }
  if (config_.max_cache_bytes > 0) {
    const std::uint64_t target = config_.max_cache_bytes / 100 * kEvictTargetPercent;
    r.evicted = queue_.evict_lru(config_.max_cache_bytes, target, on_evicted_, &stop_work_);
    if (r.evicted.records > 0)
      spdlog::info("evicted {} least recently used records: {} -> {} bytes (max_cache_bytes {})",
                   r.evicted.records, r.evicted.bytes_before, r.evicted.bytes_after, config_.max_cache_bytes);
  }
  return r;
}

void Maintenance::loop() {
  auto next_pass = std::chrono::steady_clock::now();
  for (;;) {
    std::optional<std::pair<PurgeRequest, PurgeDone>> purge;
    {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, next_pass, [&] { return stopping_ || poked_ || !purges_.empty(); });
      if (stopping_) return;
      if (!purges_.empty()) {
        purge = std::move(purges_.front());
        purges_.pop_front();
      } else if (poked_) {
        poked_ = false;
        next_pass = std::min(next_pass, std::chrono::steady_clock::now() + kPokeDelay);
        continue;
      }
    }
    try {
      if (purge) {
        const PurgeResult result = queue_.purge(purge->first, &stop_work_);
        purge->second(result, {});
        continue;
      }
      if (std::chrono::steady_clock::now() < next_pass) continue;
      run_pass();
    } catch (const std::exception& e) {
      // A full or damaged cache: say so, keep serving, try again next time.
      spdlog::error("maintenance: {}", e.what());
      if (purge) purge->second(std::nullopt, e.what());
    }
    next_pass = std::chrono::steady_clock::now() + config_.maintenance_interval;
  }
}

protocol::Bounds bounds_of(const Config& config, const JobQueue& queue) {
  const QueueTallies t = queue.tallies();
  return {config.max_cache_bytes, queue.records_bytes(), t.records_evicted, config.max_queued_jobs, t.jobs_dropped,
          config.job_retention.count(), t.jobs_purged, t.usage_dropped, queue.indexing()};
}

}  // namespace kd::daemon
