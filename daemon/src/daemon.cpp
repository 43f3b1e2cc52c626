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
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "http/http_server.hpp"
#include "http/metrics.hpp"
#include "kdispatch/kdispatch.h"
#include "queue/job_queue.hpp"
#include "sched/maintenance.hpp"
#include "sched/scheduler.hpp"
#include "server/server.hpp"
#include "stats/client_stats.hpp"

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

json job_json(const Job& j) {
  return {{"key", j.key},           {"state", to_string(j.state)}, {"count", j.count},
          {"priority", j.priority()}, {"attempts", j.attempts},    {"reason", j.reason}};
}

}  // namespace

int run_daemon(const Config& config) {
  const auto started = std::chrono::steady_clock::now();
  DaemonLock lock(config.cache_dir);
  ClientStatsBook client_stats(unix_ms_now());  // outlives the queue, whose completions mark saves
  JobQueue queue(config.cache_dir, QueueLimits{config.max_queued_jobs});
  load_client_stats(client_stats, queue);
  Metrics metrics;
  asio::io_context io(1);
  Backends backends = make_backends(config);
  const bool have_backend = !backends.runners.empty();
  const std::string backend_message =
      have_backend ? fmt::format("{} search runner(s)", backends.runners.size()) : backends.why_none;

  std::unique_ptr<Server> server;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Maintenance> maintenance;

  const auto gauges = [&] {
    return Gauges{queue.counts(), server->clients(), server->subscribers(), queue.generation(),
                  have_backend, queue.tallies(), queue.records_bytes()};
  };
  const auto status = [&](std::size_t top) {
    const QueueCounts counts = queue.counts();
    json jobs = json::object();
    for (std::size_t s = 0; s < kJobStateCount; ++s)
      jobs[std::string(to_string(static_cast<JobState>(s)))] = counts.by_state[s];
    json s{{"daemon", KD_VERSION_STRING},
           {"pid", ::getpid()},
           {"uptime_s", std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::steady_clock::now() - started).count()},
           {"generation", queue.generation()},
           {"cache_dir", config.cache_dir.string()},
           {"socket", config.socket.string()},
           {"search_backend", {{"available", have_backend}, {"message", backend_message}}},
           {"jobs", jobs},
           {"queue_depth", counts.by_state[static_cast<std::size_t>(JobState::queued)]},
           {"clients", server->clients()},
           {"subscribers", server->subscribers()},
           {"running", scheduler->running_keys()},
           {"transactions_committed", queue.transactions_committed()},
           {"clients_reporting", client_stats.live()},
           {"client_totals", client_stats.totals().to_json()},
           {"bounds", bounds_json(config, queue)}};
    if (top > 0) {
      json list = json::array();
      for (const Job& job : queue.top_jobs(top)) {
        json j = job_json(job);
        if (job.state == JobState::running) j["progress"] = scheduler->progress_of(job.key);
        list.push_back(std::move(j));
      }
      s["top_jobs"] = list;
    }
    return s;
  };
  const auto stats = [&] {
    json counters = json::object();
    for (std::size_t c = 0; c < static_cast<std::size_t>(Counter::count_); ++c)
      counters[std::string(counter_name(static_cast<Counter>(c)))] = metrics.get(static_cast<Counter>(c));
    return json{{"counters", counters},
                {"candidates_rejected", metrics.rejected()},
                {"generation", queue.generation()},
                {"transactions_committed", queue.transactions_committed()},
                {"clients", client_stats.to_json()}};
  };

  HttpServer http(io, HttpRoutes{[&] {
                                   return prometheus_text(metrics, gauges(),
                                                          {client_stats.totals(), client_stats.live()});
                                 },
                                 [&] { return status(20).dump(); }});
  asio::signal_set signals(io, SIGTERM, SIGINT);
  asio::steady_timer save_timer(io);
  std::function<void()> save_periodically = [&] {
    save_timer.expires_after(kClientStatsSaveInterval);
    save_timer.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      save_client_stats(client_stats, queue, /*force=*/false, {});
      save_periodically();
    });
  };
  bool stopping = false;
  const auto shutdown = [&] {
    if (stopping) return;
    stopping = true;
    spdlog::info("shutting down: no new clients; running jobs go back to the queue");
    signals.cancel();
    save_timer.cancel();
    server->stop();
    http.stop();
  };

  server = std::make_unique<Server>(
      io, config, queue, metrics, client_stats,
      ServerHooks{shutdown, [&] { scheduler->notify_work(); },
                  [&](const std::string& key) { scheduler->cancel_running(key); }, status, stats,
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
  scheduler->start();
  maintenance->start();
  save_periodically();
  spdlog::info("kdispatchd {} ready: cache {}, {} jobs queued", KD_VERSION_STRING,
               config.cache_dir.string(), queue.counts().by_state[0]);

  io.run();
  scheduler->stop();  // runners return; their jobs are re-queued through the queue
  maintenance->stop();
  save_client_stats(client_stats, queue, /*force=*/false, {});  // sessions closed: counted as gone
  queue.stop();       // every pending change committed
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace kd::daemon
