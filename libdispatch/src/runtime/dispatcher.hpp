// The application-side runtime: the registry, the miss queue, and the background thread that fills
// the registry from the cache and talks to the daemon.
//
// Calling threads use lookup() only: no lock, no allocation, no system call. Everything else runs
// on the background thread:
//   - drains miss reports: inserts a pending entry, looks the key up in the cache (CacheReader),
//     loads the module through the EntryLoader and publishes the entry, or publishes a negative
//     entry remembering the generation; reports cache misses to the daemon once per key;
//   - when the cache generation moves (a `published` event, or polling every poll_interval while
//     no daemon is connected) re-checks every known key: new records are loaded and swapped in,
//     evicted ones fall back;
//   - reports the process's call counters to the daemon every few seconds when they changed
//     (stats_reporter.hpp), and once more, without blocking, when it stops;
//   - reports which records the process hit (the entries' usage marks) every few seconds, for
//     the daemon's least-recently-used eviction (usage_reporter.hpp), and once more when it stops;
//   - frees retired entries once no reader can hold them.
// Retired CUDA resources (modules, workspaces) are kept until the dispatcher stops: a kernel queued
// on a stream, or captured in a CUDA graph, may still use them after cuLaunchKernel returned, and
// no driver query says when a graph that captured one is destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/entry_loader.hpp"
#include "registry/epoch.hpp"
#include "registry/miss_queue.hpp"
#include "registry/registry.hpp"
#include "store/cache_store.hpp"

namespace kd {

struct DispatcherOptions {
  std::filesystem::path cache_dir;
  std::optional<std::filesystem::path> socket_path;  // nullopt: no daemon client at all
  std::chrono::milliseconds poll_interval{1000};     // generation polling without a daemon
  RuntimeVersions versions;
  std::size_t miss_queue_capacity = 1024;
};

// Process-wide counters of the background side (loads, swaps, ...), read by kd_stats.
struct DispatcherCounters {
  std::atomic<std::uint64_t> loads{0}, load_failures{0}, swaps{0}, reports_queued{0},
      reports_sent{0}, reports_dropped{0}, generation{0}, entries{0}, daemon_connected{0};
};
DispatcherCounters& dispatcher_counters() noexcept;

class Dispatcher {
public:
  // Starts the background thread.
  Dispatcher(DispatcherOptions options, std::unique_ptr<EntryLoader> loader);
  // Stops and joins the background thread, then frees entries and CUDA resources. Requires that
  // no thread is inside lookup().
  ~Dispatcher();
  // Stops and joins the background thread; idempotent; makes no CUDA call. Lookups keep working
  // (misses are no longer reported or loaded). Called at process exit, before the application's
  // own exit handlers tear CUDA down under a thread that may be loading a module. After the join
  // it makes one non-blocking attempt to send the final counter report (never waits for it).
  void stop_background() noexcept;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  struct Lookup {
    const Entry* entry = nullptr;  // loaded entry on a hit
    FallbackReason reason = FallbackReason::no_entry;
  };
  // Calling threads, inside a ReadGuard on `slot`. A miss on an unknown key queues a report.
  // Counts nothing in the thread's slot: the caller counts the hit or the fallback reason.
  Lookup lookup(const CallKey& key) noexcept {
    const std::uint64_t hash = hash_call_key(key);
    const Entry* e = registry_.lookup(key, hash);
    if (e != nullptr && e->state == EntryState::loaded) [[likely]] {
      if (e->used.load(std::memory_order_relaxed) == 0) e->used.store(1, std::memory_order_relaxed);
      return {e, FallbackReason::no_entry};
    }
    return miss(key, e);
  }

  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  std::uint64_t queue_drops() const noexcept { return misses_.dropped(); }

private:
  // lookup() when `e` (the key's entry, or nullptr) is not loaded: out of line, so the hit path
  // stays small enough to inline at every call site.
  Lookup miss(const CallKey& key, const Entry* e) noexcept;
  void run();
  void step(std::chrono::steady_clock::time_point now);
  void handle_miss(const CallKey& key);
  void resolve(const CallKey& key, const std::string& line, const Entry* current);
  // `record`: the identity of the record it resolved to (a vendor verdict, or one that failed to
  // load), 0 for none.
  void publish_negative(const CallKey& key, FallbackReason reason, std::uint64_t record = 0);
  void refresh_and_recheck();
  void wait_for_work(std::chrono::milliseconds timeout);

  DispatcherOptions options_;
  std::unique_ptr<EntryLoader> loader_;
  Registry registry_;
  MissQueue misses_;
  // Background thread only:
  std::optional<CacheReader> reader_;
  std::unordered_map<std::string, std::vector<CallKey>> keys_by_line_;
  // Call line -> the line of the range record that serves it (issue 29), for usage reports.
  std::unordered_map<std::string, std::string> served_by_;
  std::vector<std::unique_ptr<EntryResources>> resources_;
  std::chrono::steady_clock::time_point next_poll_{};
  struct Connection;
  std::unique_ptr<Connection> connection_;

  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> steps_{0};
  std::atomic<bool> stop_{false};
  int wake_fd_ = -1;  // eventfd: stop() wakes the thread at once
  std::thread thread_;
  std::mutex stop_mutex_;  // serializes joins (kd_shutdown racing the exit handler)
};

}  // namespace kd
