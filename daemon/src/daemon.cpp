#include "daemon.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "backup/cache_backups.hpp"
#include "common/error.hpp"
#include "config/config_reload.hpp"
#include "driver/winner_record.hpp"
#include "http/http_server.hpp"
#include "http/metrics.hpp"
#include "http/public_status.hpp"
#include "kdispatch/kdispatch.h"
#include "protocol/messages.hpp"
#include "queue/job_queue.hpp"
#include "remote/remote_tier.hpp"
#include "sched/maintenance.hpp"
#include "sched/scheduler.hpp"
#include "server/peer_access.hpp"
#include "server/server.hpp"
#include "stats/client_stats.hpp"
#include "store/cache_recovery.hpp"

namespace kd::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// The daemon lock: one kdispatchd per cache directory (flock is released by the kernel when the
// process dies, so kill -9 leaves no stale lock).
class DaemonLock {
public:
  explicit DaemonLock(const std::filesystem::path& cache_dir) {
    std::filesystem::create_directories(cache_dir);
    const auto path = cache_dir / "kdispatchd.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    KD_SYS_CHECK(fd_, path.string());
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw Error(ErrorDomain::usage, 0,
                  fmt::format("another kdispatchd serves the cache {} (lock {} is held)",
                              cache_dir.string(), path.string()));
    }
  }
  ~DaemonLock() { ::close(fd_); }
  DaemonLock(const DaemonLock&) = delete;
  DaemonLock& operator=(const DaemonLock&) = delete;

private:
  int fd_ = -1;
};

// Written to a temporary name and renamed, so a reader never sees a partial number.
void write_port_file(const std::filesystem::path& path, std::uint16_t port) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) throw Error(ErrorDomain::system, errno, "cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// How often changed client counters are committed. A daemon killed between saves loses only the
// counts of processes that exit before it returns (a running process re-sends its cumulative ones).
constexpr std::chrono::seconds kClientStatsSaveInterval{5};

// How often the cache's generation is read back, for writes of other processes that did not tell
// the daemon (a kdctl that could not reach the socket): subscribers then still hear of them.
constexpr std::chrono::seconds kGenerationPollInterval{2};

// SIGHUP: load the configuration again and apply what may change while running.
void reload_config(const ConfigLoader& reload, Config& live, Scheduler& scheduler) {
  if (!reload) {
    spdlog::info("SIGHUP: no configuration to reload; ignored");
    return;
  }
  Config fresh;
  try {
    fresh = reload();
  } catch (const std::exception& e) {
    spdlog::error("SIGHUP: the configuration was not reloaded, the daemon keeps its settings: {}", e.what());
    return;
  }
  const ReloadResult r = apply_reload(live, fresh);
  spdlog::set_level(spdlog::level::from_str(live.log_level));
  scheduler.set_limits(live);
  spdlog::info("SIGHUP: configuration reloaded{}: {}", live.config_file.empty() ? "" : " from " + live.config_file.string(),
               r.applied.empty() ? "nothing changed" : fmt::format("{}", fmt::join(r.applied, ", ")));
  if (!r.restart_needed.empty())
    spdlog::warn("SIGHUP: changed, but applied only at a restart: {}", fmt::join(r.restart_needed, ", "));
}

}  // namespace

int run_daemon(const Config& config, const ConfigLoader& reload) {
  const auto started = std::chrono::steady_clock::now();
  Config live = config;  // what SIGHUP changes; the io thread reads it (server, sessions)
  DaemonLock lock(config.cache_dir);
  // A damaged data.mdb is moved aside (and the compact copy restored) before anything opens it.
  if (const StartupRepair repair = repair_at_startup(config.cache_dir);
      repair.outcome != StartupRepair::Outcome::healthy) {
    spdlog::warn("{}", repair.message(config.cache_dir));
  }
  ClientStatsBook client_stats(unix_ms_now());  // outlives the queue, whose completions mark saves
  JobQueue queue(config.cache_dir, QueueLimits{config.max_queued_jobs, config.buckets});
  share_cache_with_group(config);  // the cache files exist now
  CacheBackups backups(queue.cache_env(), config.backup_interval);
  load_client_stats(client_stats, queue);
  // Vendor verdicts of an older search: their keys are searched again; the verdicts serve meanwhile.
  if (const std::size_t stale = queue.requeue_stale_verdicts(search::kSearchVersion); stale > 0)
    spdlog::info("{} vendor verdict(s) came from an older search; their keys are queued again", stale);
  Metrics metrics;
  asio::io_context io(1);
  Backends backends = make_backends(config);
  const bool have_backend = !backends.runners.empty();
  // One GPU model for every runner: shape lines are keyed for it (Server::set_home_device).
  std::optional<DevicePart> home_device;
  for (const auto& runner : backends.runners) {
    if (!home_device) home_device = runner->device();
    else if (!(*home_device == runner->device())) {
      home_device.reset();
      break;
    }
  }
  const std::string backend_message =
      have_backend ? fmt::format("{} search runner(s)", backends.runners.size()) : backends.why_none;

  std::unique_ptr<Server> server;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Maintenance> maintenance;
  // Issue 31: the fleet's remote tier, when `remote` names one.
  std::unique_ptr<RemoteTier> remote;
  if (config.remote.endpoint) {
    remote = std::make_unique<RemoteTier>(
        config, queue, home_device, make_record_verifier(config, have_backend ? std::string() : backends.why_none),
        [&](const std::string& key, std::uint64_t generation) {
          server->notify_published(key, generation);
          maintenance->poke();
        });
  }

  const auto gauges = [&] {
    return Gauges{queue.counts(), server->clients(), server->subscribers(), queue.generation(),
                  have_backend, queue.tallies(), queue.records_bytes()};
  };
  const auto runners = [&] {
    std::vector<protocol::RunnerEntry> list;
    for (const RunnerStatus& r : scheduler->runners_status()) list.push_back(runner_entry(r, kMaxJobTextBytes));
    return list;
  };
  const auto status = [&](std::size_t top) {
    const QueueCounts counts = queue.counts();
    const auto of = [&](JobState s) { return counts.by_state[static_cast<std::size_t>(s)]; };
    protocol::Status s;
    s.daemon = KD_VERSION_STRING;
    s.pid = ::getpid();
    s.uptime_s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
    s.generation = queue.generation();
    s.cache_dir = config.cache_dir.string();
    s.socket = config.socket.string();
    s.search_backend = {have_backend, backend_message};
    s.jobs = {of(JobState::queued), of(JobState::running), of(JobState::done), of(JobState::failed),
              of(JobState::cancelled)};
    s.queue_depth = of(JobState::queued);
    s.clients = server->clients();
    s.subscribers = server->subscribers();
    s.running = scheduler->running_keys();
    s.runners = runners();
    s.search_policy = protocol::SearchPolicy{live.search_policy.miss_duty_cycle, live.search_policy.prewarm_duty_cycle};
    s.transactions_committed = queue.transactions_committed();
    s.clients_reporting = client_stats.live();
    s.client_totals = client_stats.totals().wire();
    s.bounds = bounds_of(config, queue);
    if (remote) s.remote = remote->status();
    if (top > 0) {
      auto& list = s.top_jobs.emplace();
      for (const Job& job : queue.top_jobs(top)) {
        protocol::JobEntry& e = list.emplace_back(job_entry(job));
        if (job.state == JobState::running)
          e.progress = protocol::truncate_utf8(scheduler->progress_of(job.key), kMaxJobTextBytes);
      }
    }
    return s;
  };
  const auto stats = [&] {
    protocol::Stats s;
    for (std::size_t c = 0; c < static_cast<std::size_t>(Counter::count_); ++c)
      s.counters[std::string(counter_name(static_cast<Counter>(c)))] = metrics.get(static_cast<Counter>(c));
    s.candidates_rejected = metrics.rejected();
    s.generation = queue.generation();
    s.transactions_committed = queue.transactions_committed();
    s.clients = client_stats.report();
    return s;
  };
  const auto remote_metrics = [&] { return remote ? remote->prometheus_text() : std::string(); };

  HttpServer http(io, HttpRoutes{[&] {
                                   return prometheus_text(metrics, gauges(),
                                                          {client_stats.totals(), client_stats.live()}) +
                                          runners_prometheus_text(scheduler->runners_status()) + remote_metrics();
                                 },
                                 [&] { return public_status(json(status(0))).dump(); }});
  asio::signal_set signals(io, SIGTERM, SIGINT);
  asio::signal_set hangups(io, SIGHUP);
  asio::steady_timer generation_timer(io);
  asio::steady_timer save_timer(io);
  std::function<void()> save_periodically = [&] {
    save_timer.expires_after(kClientStatsSaveInterval);
    save_timer.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      save_client_stats(client_stats, queue, /*force=*/false, {});
      save_periodically();
    });
  };
  std::function<void()> poll_generation = [&] {
    generation_timer.expires_after(kGenerationPollInterval);
    generation_timer.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      queue.sync_generation([&](const CommitResult& r, std::uint64_t before, std::uint64_t after) {
        if (!r.committed || after == before) return;
        spdlog::info("the cache's generation went from {} to {} (written by another process)", before, after);
        server->notify_published("", after);
      });
      poll_generation();
    });
  };
  std::function<void()> wait_for_hangup = [&] {
    hangups.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      reload_config(reload, live, *scheduler);
      wait_for_hangup();
    });
  };
  bool stopping = false;
  const auto shutdown = [&] {
    if (stopping) return;
    stopping = true;
    spdlog::info("shutting down: no new clients; running jobs go back to the queue");
    signals.cancel();
    hangups.cancel();
    generation_timer.cancel();
    save_timer.cancel();
    server->stop();
    http.stop();
  };

  server = std::make_unique<Server>(
      io, live, queue, metrics, client_stats,
      ServerHooks{shutdown,
                  [&] {
                    scheduler->notify_work();
                    if (remote) remote->poke();
                  },
                  [&](const std::string& key) { scheduler->cancel_running(key); }, status, stats,
                  [&](const std::string& key) { return scheduler->progress_of(key); },
                  [&](PurgeRequest r, Maintenance::PurgeDone done) { maintenance->purge(std::move(r), std::move(done)); }});
  scheduler = std::make_unique<Scheduler>(
      config, queue, metrics, std::move(backends.runners),
      [&](const std::string& key, std::uint64_t generation) {
        server->notify_published(key, generation);
        maintenance->poke();
      });
  maintenance = std::make_unique<Maintenance>(
      config, queue, [&](std::uint64_t generation, std::uint64_t records) {
        server->notify_evicted(generation, records);
      });

  server->set_home_device(home_device);
  if (remote) {
    server->set_publish_observer([&](const std::string& key) { remote->queue_push(key); });
    scheduler->set_fleet_hooks(remote->fleet_hooks());
  }
  server->start();
  if (config.metrics_listen != "off") {
    const auto port = http.start(config.metrics_listen);
    spdlog::info("metrics on http://{}:{}/metrics", config.metrics_listen.substr(0, config.metrics_listen.rfind(':')), port);
    if (!config.metrics_port_file.empty()) write_port_file(config.metrics_port_file, port);
  }
  if (!have_backend) spdlog::warn("{}", backend_message);
  signals.async_wait([&](boost::system::error_code ec, int signo) {
    if (ec) return;
    spdlog::info("signal {} received", signo);
    shutdown();
  });
  wait_for_hangup();
  scheduler->start();
  maintenance->start();
  if (remote) remote->start();
  save_periodically();
  poll_generation();
  spdlog::info("kdispatchd {} ready: cache {}, {} jobs queued", KD_VERSION_STRING,
               config.cache_dir.string(), queue.counts().by_state[0]);

  // A handler that throws is a bug: it is logged and the loop goes on, so that no request, however
  // malformed, stops the daemon (requests are bounded and checked before this can happen).
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {
      spdlog::error("internal error in the io loop, serving on: {}", e.what());
    }
  }
  scheduler->stop();  // runners return; their jobs are re-queued through the queue
  if (remote) remote->stop();  // held leases released
  maintenance->stop();
  save_client_stats(client_stats, queue, /*force=*/false, {});  // sessions closed: counted as gone
  queue.stop();       // every pending change committed
  backups.finish();   // the compact copy of what was committed
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace kd::daemon
