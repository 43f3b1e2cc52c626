// The Unix-socket server: accepts clients (peer_access.hpp's admission, client limit), owns the
// sessions, answers requests through the request table (requests.cpp) and pushes `published`
// notices to subscribers. Runs on one io_context thread; notify_published may be called from any
// thread.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "http/metrics.hpp"
#include "key/gemm_key.hpp"
#include "queue/job_queue.hpp"
#include "stats/client_stats.hpp"

namespace kd::daemon {

class Session;

// What the server asks of the rest of the daemon.
struct ServerHooks {
  std::function<void()> shutdown;                       // a client sent shutdown
  std::function<void()> work_added;                     // misses or prewarm were committed
  std::function<void(const std::string& key)> cancelled;  // a job was cancelled
  std::function<nlohmann::json(std::size_t top_jobs)> status;  // the status object
  std::function<nlohmann::json()> stats;                       // the stats object
  std::function<std::string(const std::string& key)> progress;  // a running job's progress line
  // Runs a purge off the io thread; `done` runs on another thread (post to the io thread).
  std::function<void(PurgeRequest, std::function<void(const std::optional<PurgeResult>&, const std::string& error)> done)>
      purge;
};

class Server {
public:
  Server(boost::asio::io_context& io, const Config& config, JobQueue& queue, Metrics& metrics,
         ClientStatsBook& client_stats, ServerHooks hooks);
  ~Server();

  // Binds the socket (refusing when another daemon answers on it, replacing a stale file),
  // applies socket_mode and starts accepting. Throws kd::Error on failure.
  void start();
  // Stops accepting, closes every session and removes the socket file.
  void stop();
  // Thread-safe: posts a `published` notice to every subscriber.
  void notify_published(std::string key, std::uint64_t generation);
  // Thread-safe: tells every subscriber that `records` records were evicted at `generation`
  // (a `published` notice with an empty key and `evicted`).
  void notify_evicted(std::uint64_t generation, std::uint64_t records);

  // The GPU model every search runner has, when they share one: shape lines sent without a device
  // part are then keyed for it (requests.cpp). Set before start().
  void set_home_device(std::optional<DevicePart> device) { home_device_ = std::move(device); }
  const std::optional<DevicePart>& home_device() const noexcept { return home_device_; }

  std::size_t clients() const noexcept { return sessions_.size(); }
  std::size_t subscribers() const;

  // For sessions and the request table.
  boost::asio::io_context& io() noexcept { return io_; }
  const Config& config() const noexcept { return config_; }
  JobQueue& queue() noexcept { return queue_; }
  Metrics& metrics() noexcept { return metrics_; }
  ClientStatsBook& client_stats() noexcept { return client_stats_; }
  const ServerHooks& hooks() const noexcept { return hooks_; }
  void forget(const std::shared_ptr<Session>& session);
  // Handles one frame's payload for `session` (requests.cpp).
  void handle_payload(Session& session, const std::string& payload);

private:
  void accept_next();

  boost::asio::io_context& io_;
  const Config& config_;
  JobQueue& queue_;
  Metrics& metrics_;
  ClientStatsBook& client_stats_;
  ServerHooks hooks_;
  std::optional<DevicePart> home_device_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::set<std::shared_ptr<Session>> sessions_;
  bool bound_ = false;
  std::uint64_t next_session_id_ = 1;
};

// Frames of the daemon's replies ({"v":1,"type":...} plus fields). Never throw for what a client
// sent (only std::bad_alloc): invalid UTF-8 is replaced, an error message is cut to
// protocol::kMaxErrorMessageBytes, and a reply over the frame limit becomes an error frame saying
// so (every reply is bounded where it is built; this is the last line of defence).
std::string reply_frame(const char* type, nlohmann::json fields = nlohmann::json::object());
std::string error_frame(const std::string& message);

// A job as the status and jobs replies show it: key, state, count, priority, attempts, reason (cut
// to kMaxJobTextBytes, as is a progress line), so that an entry stays under ~1.1 KB.
inline constexpr std::size_t kMaxJobTextBytes = 256;
nlohmann::json job_json(const Job& job);

}  // namespace kd::daemon
