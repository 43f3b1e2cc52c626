#include "runtime/dispatcher.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/daemon_connection.hpp"
#include "runtime/stats_reporter.hpp"
#include "runtime/usage_reporter.hpp"

namespace kd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long the background thread sleeps between looks at the miss queue. Producers never wake it
// (that would be a system call on the calling thread), so it polls: quickly after work, backing
// off to kIdleSleep when nothing happens.
constexpr milliseconds kBusySleep{1};
constexpr milliseconds kIdleSleep{20};

FallbackReason reason_for(LookupMiss m) {
  switch (m) {
    case LookupMiss::not_found: return FallbackReason::no_entry;
    case LookupMiss::corrupted: return FallbackReason::corrupted;
    case LookupMiss::schema_mismatch:
    case LookupMiss::foreign_device:
    case LookupMiss::foreign_versions: return FallbackReason::foreign_record;
    case LookupMiss::cache_unavailable: return FallbackReason::cache_unavailable;
  }
  return FallbackReason::cache_unavailable;
}

// Identity of a record's content: a republished record with the same bytes is not a swap.
std::uint64_t record_id(const Record& r) {
  XXH3_state_t* s = XXH3_createState();
  XXH3_64bits_reset(s);
  XXH3_64bits_update(s, r.cubin.data(), r.cubin.size());
  XXH3_64bits_update(s, r.cublaslt_algo.data(), r.cublaslt_algo.size());
  XXH3_64bits_update(s, r.key_line.data(), r.key_line.size());
  XXH3_64bits_update(s, &r.created_unix_s, sizeof(r.created_unix_s));
  const std::uint64_t id = XXH3_64bits_digest(s);
  XXH3_freeState(s);
  return id == 0 ? 1 : id;
}

}  // namespace

Dispatcher::Lookup Dispatcher::miss(const CallKey& key, const Entry* e) noexcept {
  FallbackReason reason;
  if (e == nullptr) {
    reason = FallbackReason::not_loaded;  // first seen: the background thread resolves it
    auto& counters = dispatcher_counters();
    if (misses_.push(MissReport{key}) == MissQueue::Push::queued)
      counters.reports_queued.fetch_add(1, std::memory_order_relaxed);
  } else {
    reason = e->miss_reason;
    e->miss_count.fetch_add(1, std::memory_order_relaxed);
    // A vendor verdict is used as a hit is: its record stays off the eviction list's cold end.
    if (reason == FallbackReason::vendor_chosen && e->used.load(std::memory_order_relaxed) == 0)
      e->used.store(1, std::memory_order_relaxed);
  }
  return {nullptr, reason};
}

DispatcherCounters& dispatcher_counters() noexcept {
  static DispatcherCounters counters;
  return counters;
}

struct Dispatcher::Connection {
  explicit Connection(DaemonConnectionOptions o) : daemon(std::move(o)) {}
  DaemonConnection daemon;
  StatsReporter stats;
  UsageReporter usage;
  bool final_stats_sent = false;
};

Dispatcher::Dispatcher(DispatcherOptions options, std::unique_ptr<EntryLoader> loader)
    : options_(std::move(options)),
      loader_(std::move(loader)),
      misses_(options_.miss_queue_capacity) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (options_.socket_path)
    connection_ = std::make_unique<Connection>(DaemonConnectionOptions{.socket_path = *options_.socket_path});
  thread_ = std::thread([this] { run(); });
}

void Dispatcher::stop_background() noexcept {
  stop_.store(true, std::memory_order_release);
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  try {
    const std::lock_guard lock(stop_mutex_);
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
    // The thread is gone, so the connection is this thread's now: one non-blocking attempt at the
    // final counter report (the exit path must not block the host).
    if (!thread_.joinable() && connection_ && !connection_->final_stats_sent) {
      connection_->final_stats_sent = true;
      connection_->usage.finish(connection_->daemon, registry_, keys_by_line_, served_by_);
      connection_->stats.finish(connection_->daemon);
    }
  } catch (...) {
  }
}

Dispatcher::~Dispatcher() {
  stop_background();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  // registry_ frees entries; resources_ (modules, workspaces) are released by their destructors,
  // which synchronize their context first.
}

void Dispatcher::run() {
  try {
    loader_->on_thread_start();
    reader_.emplace(options_.cache_dir, options_.versions);
    generation_.store(reader_->refresh(), std::memory_order_release);
    dispatcher_counters().generation.store(generation_.load(), std::memory_order_relaxed);
    if (!reader_->available())
      spdlog::info("kdispatch: cache at {} unavailable ({}); every call falls back until it appears",
                   options_.cache_dir.string(), reader_->unavailable_reason());
  } catch (const std::exception& e) {
    spdlog::error("kdispatch: background thread could not start: {}", e.what());
  }
  milliseconds sleep = kBusySleep;
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint64_t before = steps_.load(std::memory_order_relaxed);
    try {
      step(Clock::now());
    } catch (const std::exception& e) {
      // The failure rule: the application never sees this; calls keep falling back.
      spdlog::error("kdispatch: background step failed: {}", e.what());
    }
    const bool worked = steps_.load(std::memory_order_relaxed) != before;
    sleep = worked ? kBusySleep : std::min(sleep * 2, kIdleSleep);
    wait_for_work(sleep);
  }
}

void Dispatcher::wait_for_work(milliseconds timeout) {
  pollfd fds[2];
  nfds_t n = 0;
  fds[n++] = {wake_fd_, POLLIN, 0};
  if (connection_ && connection_->daemon.connected())
    fds[n++] = {connection_->daemon.fd(),
                static_cast<short>(POLLIN | (connection_->daemon.wants_write() ? POLLOUT : 0)), 0};
  ::poll(fds, n, static_cast<int>(timeout.count()));
}

void Dispatcher::step(Clock::time_point now) {
  if (!reader_) return;
  bool worked = false;
  while (auto report = misses_.pop()) {
    handle_miss(report->key);
    worked = true;
  }

  bool recheck = false;
  if (connection_) {
    DaemonConnection& d = connection_->daemon;
    d.tick(now);
    if (d.connected()) {
      d.on_writable(now);
      for (const protocol::Published& p : d.on_readable(now)) {
        d.forget(p.key);
        recheck = true;
      }
      connection_->stats.tick(d, now);
      connection_->usage.tick(d, registry_, keys_by_line_, served_by_, now);
    }
    auto& c = dispatcher_counters();
    c.daemon_connected.store(d.connected() ? 1 : 0, std::memory_order_relaxed);
    c.reports_sent.store(d.reports_sent(), std::memory_order_relaxed);
  }
  const bool polling = !connection_ || !connection_->daemon.connected();
  if (polling && now >= next_poll_) {
    next_poll_ = now + options_.poll_interval;
    recheck = true;
  }
  if (recheck) refresh_and_recheck();
  if (registry_.retired_pending() > 0 && registry_.reclaim() > 0) worked = true;
  if (worked) steps_.fetch_add(1, std::memory_order_relaxed);
  dispatcher_counters().reports_dropped.store(
      misses_.dropped() + (connection_ ? connection_->daemon.reports_dropped() : 0),
      std::memory_order_relaxed);
}

void Dispatcher::handle_miss(const CallKey& key) {
  if (registry_.find(key) != nullptr) return;  // queued twice before the first was handled
  auto line = loader_->key_line(key);
  if (auto* reason = std::get_if<FallbackReason>(&line)) {
    publish_negative(key, *reason);
    return;
  }
  const std::string& l = std::get<std::string>(line);
  auto pending = std::make_unique<Entry>();
  pending->key = key;
  pending->state = EntryState::pending;
  pending->miss_reason = FallbackReason::not_loaded;
  registry_.publish(std::move(pending));
  dispatcher_counters().entries.store(registry_.size(), std::memory_order_relaxed);
  keys_by_line_[l].push_back(key);
  resolve(key, l, registry_.find(key));
}

void Dispatcher::publish_negative(const CallKey& key, FallbackReason reason, std::uint64_t record) {
  auto e = std::make_unique<Entry>();
  e->key = key;
  e->state = EntryState::negative;
  e->miss_reason = reason;
  e->record_id = record;
  e->generation = generation_.load(std::memory_order_relaxed);
  if (const Entry* old = registry_.find(key))
    e->miss_count.store(old->miss_count.load(std::memory_order_relaxed), std::memory_order_relaxed);
  registry_.publish(std::move(e));
  dispatcher_counters().entries.store(registry_.size(), std::memory_order_relaxed);
}

// Brings the entry for `key` (currently `current`, never null) up to date with the cache snapshot.
void Dispatcher::resolve(const CallKey& key, const std::string& line, const Entry* current) {
  auto& counters = dispatcher_counters();
  // The call's own record, else a range record covering its n (issue 29): the entry stays keyed
  // by the exact call, so the hit path is the same for both.
  auto found = reader_->lookup_covering(line);
  if (auto* miss = std::get_if<LookupMiss>(&found)) {
    const FallbackReason reason = reason_for(*miss);
    if (current->state == EntryState::negative && current->miss_reason == reason) return;
    publish_negative(key, reason);
    if (reason == FallbackReason::no_entry && connection_)
      connection_->daemon.report_miss(line, current->miss_count.load(std::memory_order_relaxed) + 1);
    return;
  }
  const Record& record = std::get<Record>(found);
  // Usage is reported under the record's line, which is not the call's for a range record.
  if (record.key_line != line) served_by_[line] = record.key_line;
  else served_by_.erase(line);
  const std::uint64_t id = record_id(record);
  if (record.kind == RecordKind::vendor) {
    // A vendor verdict answers the call: the vendor library runs, and nothing is reported, so a
    // bucket whose search kept the vendor is not searched again one n at a time.
    if (current->state == EntryState::negative && current->miss_reason == FallbackReason::vendor_chosen &&
        current->record_id == id)
      return;
    publish_negative(key, FallbackReason::vendor_chosen, id);
    if (connection_) connection_->daemon.forget(line);
    return;
  }
  if (current->state == EntryState::loaded && current->record_id == id) return;
  if (current->state == EntryState::negative && current->miss_reason == FallbackReason::load_failed &&
      current->record_id == id)
    return;  // the same record failed to load before; wait for another one
  auto loaded = loader_->load(key, record);
  if (auto* reason = std::get_if<FallbackReason>(&loaded)) {
    counters.load_failures.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("kdispatch: cannot load the record for {}: {}", line, to_string(*reason));
    publish_negative(key, *reason, id);
    return;
  }
  LoadedEntry& le = std::get<LoadedEntry>(loaded);
  le.entry->key = key;
  le.entry->state = EntryState::loaded;
  le.entry->record_id = id;
  le.entry->generation = generation_.load(std::memory_order_relaxed);
  const bool swap = current->state == EntryState::loaded;
  if (le.resources) resources_.push_back(std::move(le.resources));
  registry_.publish(std::move(le.entry));
  counters.loads.fetch_add(1, std::memory_order_relaxed);
  if (swap) counters.swaps.fetch_add(1, std::memory_order_relaxed);
  if (connection_) connection_->daemon.forget(line);
}

void Dispatcher::refresh_and_recheck() {
  const std::uint64_t g = reader_->refresh();
  if (g == generation_.load(std::memory_order_relaxed)) return;
  generation_.store(g, std::memory_order_release);
  dispatcher_counters().generation.store(g, std::memory_order_relaxed);
  for (const auto& [line, keys] : keys_by_line_)
    for (const CallKey& key : keys)
      if (const Entry* current = registry_.find(key)) resolve(key, line, current);
  steps_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace kd
