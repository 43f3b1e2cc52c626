// The fleet's remote tier (issue 31): daemons that share one Redis share their records and search
// each key once between them. See ARCHITECTURE.md ("The remote tier") for the design.
//
// - Committed records go to Redis as well as LMDB: queue_push() queues a key (a winner, a kdctl
//   import), the tier's thread reads the record from the cache and writes it. Keys committed while
//   Redis is unreachable wait in a set that is kept in the cache's `meta` database, and go out when
//   the link returns.
// - Misses are looked up there: on new work and every remote_poll_ms the tier's thread looks up
//   queued jobs (kLookupWindow below) in pipelined round trips. A value is
//   checked fully (remote_value.hpp); a record for this machine's environment is committed to the
//   cache (the job is done) and pushed to clients, after this machine's gate passed it unless
//   remote_trust = "trusted". A value that fails is counted by name and skipped alone.
// - One search per key: the scheduler asks before_search() for the key's lease (remote_leases.hpp)
//   and reports after_search(); the tier renews the leases it holds.
// - Redis unreachable: every call answers at once as if there were no tier (search locally, keep
//   records locally), the thread reconnects every second and then catches up: the pending pushes
//   go out and every queued key is looked up again.
// Nothing here runs on the io thread or on an application's path: a miss's handling is unchanged,
// and the tier's round trips run on its own thread (the scheduler's lease call on the runner's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "queue/job_queue.hpp"
#include "remote/record_verifier.hpp"
#include "remote/redis_link.hpp"
#include "remote/remote_counters.hpp"
#include "remote/remote_leases.hpp"
#include "remote/remote_value.hpp"
#include "sched/scheduler.hpp"

namespace kd::daemon {

class RemoteTier {
public:
  // A record from the tier was committed to the cache at `generation`: tell the subscribers.
  using ImportedFn = std::function<void(const std::string& key_line, std::uint64_t generation)>;

  // Lookups cover the kLookupWindow highest-priority queued jobs: those not looked up yet on new
  // work, all of them every kRescanPolls polls (records other daemons published since) and after
  // the link comes back, and keys whose lease another daemon holds every poll.
  static constexpr std::size_t kLookupWindow = 16384;
  static constexpr int kRescanPolls = 10;
  static constexpr std::size_t kMaxPendingPushes = 65536;

  // Reads the password (throws kd::Error (usage) naming its variable or file when it cannot) but
  // does not connect: start() does, on the tier's thread.
  RemoteTier(const Config& config, JobQueue& queue, std::optional<DevicePart> home_device,
             std::unique_ptr<RecordVerifier> verifier, ImportedFn imported);
  ~RemoteTier();
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  void start();
  // Joins the threads; held leases are released when Redis is reachable.
  void stop();

  // Thread-safe, never blocks on Redis.
  void poke();                                   // new work: look up queued keys now
  void queue_push(const std::string& key_line);  // a record was committed to the cache: push it
  // The scheduler's hooks (sched/scheduler.hpp); one round trip each, bounded by remote_timeout_ms.
  FleetHooks fleet_hooks();

  protocol::RemoteStatus status() const;  // the status reply's `remote`
  std::string prometheus_text() const;
  const RemoteCounters& counters() const noexcept { return counters_; }

private:
  using Clock = std::chrono::steady_clock;
  struct ToVerify {
    std::string job_key;
    Record record;
    std::uint64_t value_hash = 0;
  };

  void loop(std::stop_token stop);
  void verify_loop(std::stop_token stop);
  // Runs `body` on the link under link_mu_; false when there is no link or it failed (then dropped).
  bool with_link(const std::function<void(RedisLink&)>& body);
  void connect_if_due();
  void drop_link_locked(const std::string& why);
  void push_pending();
  void renew_leases();
  void lookup_queued();
  void take_value(const std::string& job_key, const std::string& line, const std::string& value);
  void import(const std::string& job_key, const Record& record);
  void save_pending();
  std::optional<Record> read_local(const std::string& line) const;
  std::string full_line(const std::string& job_key) const;

  FleetDecision before_search(const std::string& full_key);
  void after_search(const std::string& full_key, const Record* winner, const std::string& done_reason);

  const RemoteSettings settings_;
  RedisLogin login_;
  LeaseBook leases_;
  JobQueue& queue_;
  const std::optional<DevicePart> home_;
  const LocalEnvironment local_;
  std::unique_ptr<RecordVerifier> verifier_;
  ImportedFn imported_;
  RemoteCounters counters_;

  mutable std::mutex link_mu_;
  std::optional<RedisLink> link_;  // (link_mu_)
  Clock::time_point next_connect_{};
  std::atomic<bool> connected_{false};
  bool ever_connected_ = false;

  mutable std::mutex mu_;  // everything below
  std::condition_variable_any cv_;
  bool poked_ = false;
  bool scan_requested_ = false;
  Clock::time_point next_rescan_{};
  bool catch_up_ = false;  // the link just came back: look up every queued key again
  std::string last_error_;
  std::set<std::string> pending_push_;
  bool pending_saved_ = false;                          // the meta copy is non-empty
  std::set<std::string> in_tier_;                       // being imported: its `published` notice is not pushed back
  std::map<std::string, Clock::time_point> held_;       // leases this daemon holds
  std::map<std::string, std::string> waited_;           // keys whose lease another daemon held
  std::map<std::string, Clock::time_point> looked_up_;  // last lookup per key
  std::map<std::string, std::uint64_t> refused_;        // key -> hash of the value refused (counted once)
  std::map<std::string, std::string> unverified_;       // key -> why the gate cannot run here
  std::deque<ToVerify> to_verify_;
  std::set<std::string> verifying_;
  Clock::time_point next_renewal_{};

  std::jthread thread_, verify_thread_;
};

}  // namespace kd::daemon
