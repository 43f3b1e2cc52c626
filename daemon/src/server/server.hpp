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
#include "protocol/status.hpp"
#include "queue/job_queue.hpp"
#include "stats/client_stats.hpp"

namespace kd::daemon {

class Session;

// What the server asks of the rest of the daemon.
struct ServerHooks {
  std::function<void()> shutdown;                       // a client sent shutdown
  std::function<void()> work_added;                     // misses or prewarm were committed
  std::function<void(const std::string& key)> cancelled;  // a job was cancelled
  std::function<protocol::Status(std::size_t top_jobs)> status;  // the status reply
  std::function<protocol::Stats()> stats;                        // the stats reply
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
  // Issue 31: called (on the calling thread) with the key of every notify_published that names one,
  // so that the fleet's remote tier pushes winners and kdctl imports. Set before start().
  void set_publish_observer(std::function<void(const std::string& key)> observer) {
    publish_observer_ = std::move(observer);
  }

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
  std::function<void(const std::string& key)> publish_observer_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::set<std::shared_ptr<Session>> sessions_;
  bool bound_ = false;
  std::uint64_t next_session_id_ = 1;
};

// Frames of the daemon's replies, encoded by the protocol's codec. Never throw for what a client
// sent (only std::bad_alloc): invalid UTF-8 is replaced, an error message is cut to
// protocol::kMaxErrorMessageBytes, and a reply over the frame limit becomes an error frame saying
// so (every reply is bounded where it is built; this is the last line of defence).
std::string payload_frame(std::string_view type, const std::string& payload);
template <class Reply>
std::string reply_frame(const Reply& reply) {
  return payload_frame(Reply::kType, protocol::to_payload(reply));
}
std::string error_frame(const std::string& message);
// A reply whose array `list` is cut from its end until the frame fits; `<list>_omitted` then
// says how many entries were left out. For replies whose list length the client chooses.
std::string object_fitting_list(std::string_view type, nlohmann::json object, const char* list);
template <class Reply>
std::string reply_fitting_list(const Reply& reply, const char* list) {
  return object_fitting_list(Reply::kType, protocol::to_object(reply), list);
}

// A job as the status and jobs replies show it: key, state, count, priority, attempts, reason (cut
// to kMaxJobTextBytes, as is a progress line), so that an entry stays under ~1.1 KB.
inline constexpr std::size_t kMaxJobTextBytes = 256;
protocol::JobEntry job_entry(const Job& job);

}  // namespace kd::daemon
