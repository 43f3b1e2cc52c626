// The daemon's housekeeping: what keeps the cache and the job table bounded. Runs on its own
// thread, so the io thread never waits for it. Every maintenance_interval, and soon after each
// publish (poke), one pass:
//   1. stores the usage reports applications sent (JobQueue::flush_usage);
//   2. purges finished jobs unchanged for job_retention_s (oldest first, in small transactions);
//   3. when the records take more than max_cache_bytes, evicts the least recently used ones down to
//      kEvictTargetPercent of it, each batch bumping the generation; `on_evicted` then tells the
//      subscribed applications, which drop the evicted entries.
// Operator purges (`kdctl purge` through the daemon) run on the same thread, between passes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "protocol/status.hpp"
#include "queue/job_queue.hpp"

namespace kd::daemon {

class Maintenance {
public:
  using EvictedFn = std::function<void(std::uint64_t generation, std::uint64_t records)>;
  static constexpr std::uint64_t kEvictTargetPercent = 90;

  Maintenance(const Config& config, JobQueue& queue, EvictedFn on_evicted);
  ~Maintenance();
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  // Starts the thread; its first pass runs at once.
  void start();
  // Finishes the pass or purge under way and joins. Queued purges complete with an error.
  void stop();
  // A record was published: run a pass soon (the cache may be over its limit now).
  void poke();

  using PurgeDone = std::function<void(const std::optional<PurgeResult>& result, const std::string& error)>;
  // Runs `request` on the maintenance thread; `done` runs there afterwards (post to the io thread).
  void purge(PurgeRequest request, PurgeDone done);

  struct PassResult {
    PurgeResult purged;
    EvictionResult evicted;
  };
  // One pass now, on the calling thread (the thread's body; tests call it directly).
  PassResult run_pass();

private:
  void loop();

  const Config& config_;
  JobQueue& queue_;
  EvictedFn on_evicted_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> stop_work_{false};  // stopping_, read by a purge or eviction between batches
  bool poked_ = false;
  std::deque<std::pair<PurgeRequest, PurgeDone>> purges_;
  std::thread thread_;
};

// The `bounds` object of the status reply: each limit, where the cache stands and what was
// removed to keep it (daemon/PROTOCOL.md).
protocol::Bounds bounds_of(const Config& config, const JobQueue& queue);

}  // namespace kd::daemon
