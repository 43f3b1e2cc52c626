#include "remote/remote_tier.hpp"

#include <xxhash.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "key/row_key.hpp"
#include "store/lmdb.hpp"

namespace kd::daemon {
namespace {

constexpr std::chrono::seconds kReconnectInterval{1};
constexpr std::size_t kPipelineChunk = 128;
constexpr std::size_t kMaxRemembered = 1 << 16;  // keys remembered per map before it starts over
// The `meta` entry holding the keys still to push (a JSON array), so a restart loses none.
constexpr const char* kPendingMetaKey = "remote_pending_push";

std::uint64_t hash_of(std::string_view v) { return XXH3_64bits(v.data(), v.size()); }

template <class Map>
void bound(Map& m) {
  if (m.size() >= kMaxRemembered) m.clear();
}

}  // namespace

RemoteTier::RemoteTier(const Config& config, JobQueue& queue, std::optional<DevicePart> home_device,
                       std::unique_ptr<RecordVerifier> verifier, ImportedFn imported)
    : settings_(config.remote),
      login_{*config.remote.endpoint, config.remote.user, load_remote_password(config.remote), config.remote.timeout},
      leases_(config.remote.key_prefix, lease_owner_id(), config.remote.lease),
      queue_(queue),
      home_(std::move(home_device)),
      local_(local_environment(home_)),
      verifier_(std::move(verifier)),
      imported_(std::move(imported)) {
  if (const auto saved = queue_.get_meta(kPendingMetaKey)) {
    const auto j = nlohmann::json::parse(*saved, nullptr, false);
    if (j.is_array())
      for (const auto& k : j)
        if (k.is_string() && pending_push_.size() < kMaxPendingPushes) pending_push_.insert(k.get<std::string>());
    pending_saved_ = !pending_push_.empty();
  }
}

RemoteTier::~RemoteTier() { stop(); }

void RemoteTier::start() {
  spdlog::info("remote tier {} (trust: {}, lease {} ms, owner {}){}", login_.endpoint.url(), to_string(settings_.trust),
               settings_.lease.count(), leases_.owner(),
               pending_push_.empty() ? "" : fmt::format("; {} record(s) wait to be pushed", pending_push_.size()));
  if (settings_.trust == RemoteTrust::verify)
    if (const auto why = verifier_->unavailable())
      spdlog::warn("remote tier: records from the fleet will be held back, not used: {}; set remote_trust = "
                   "\"trusted\" if every daemon writing to this Redis is trusted",
                   *why);
  thread_ = std::jthread([this](std::stop_token s) { loop(s); });
  verify_thread_ = std::jthread([this](std::stop_token s) { verify_loop(s); });
}

void RemoteTier::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  verify_thread_.request_stop();
  cv_.notify_all();
  thread_.join();
  verify_thread_.join();
  std::vector<std::string> held;
  {
    const std::lock_guard lock(mu_);
    for (const auto& [k, t] : held_) held.push_back(k);
    held_.clear();
  }
  with_link([&](RedisLink& link) {
    for (const auto& k : held) leases_.release(link, k);
  });
}

void RemoteTier::poke() {
  {
    const std::lock_guard lock(mu_);
    poked_ = scan_requested_ = true;
  }
  cv_.notify_all();
}

void RemoteTier::queue_push(const std::string& key_line) {
  if (key_line.empty()) return;
  {
    const std::lock_guard lock(mu_);
    if (in_tier_.contains(key_line)) return;  // it came from the tier
    if (pending_push_.size() < kMaxPendingPushes) pending_push_.insert(key_line);
    else spdlog::warn("remote tier: {} records wait to be pushed; {} stays local", kMaxPendingPushes, key_line);
    poked_ = true;
  }
  cv_.notify_all();
}

FleetHooks RemoteTier::fleet_hooks() {
  FleetHooks h;
  h.before_search = [this](const std::string& k) { return before_search(k); };
  h.after_search = [this](const std::string& k, const Record* w, const std::string& r) { after_search(k, w, r); };
  h.wait = std::min(settings_.poll, settings_.lease);
  return h;
}

bool RemoteTier::with_link(const std::function<void(RedisLink&)>& body) {
  const std::lock_guard lock(link_mu_);
  if (!link_) return false;
  try {
    body(*link_);
    return true;
  } catch (const RedisDown& e) {
    drop_link_locked(e.what());
    return false;
  }
}

void RemoteTier::drop_link_locked(const std::string& why) {
  link_.reset();
  if (connected_.exchange(false)) {
    counters_.add(RemoteCounter::outages);
    spdlog::warn("remote tier: link lost ({}); working locally and reconnecting", why);
  }
  const std::lock_guard lock(mu_);
  last_error_ = why;
}

void RemoteTier::connect_if_due() {
  {
    const std::lock_guard lock(link_mu_);
    if (link_ || Clock::now() < next_connect_) return;
    next_connect_ = Clock::now() + kReconnectInterval;
  }
  try {
    RedisLink fresh(login_);  // outside the lock: the scheduler's calls do not wait for a connect
    const std::lock_guard lock(link_mu_);
    link_.emplace(std::move(fresh));
    connected_ = true;
    spdlog::info("remote tier: connected to {}{}", login_.endpoint.url(), ever_connected_ ? " again; catching up" : "");
    ever_connected_ = true;
    const std::lock_guard state(mu_);
    catch_up_ = true;
    last_error_.clear();
  } catch (const RedisDown& e) {
    const std::lock_guard lock(mu_);
    if (last_error_ != e.what()) spdlog::warn("remote tier: {}; working locally, retrying every second", e.what());
    last_error_ = e.what();
  }
}

void RemoteTier::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    connect_if_due();
    push_pending();
    renew_leases();
    lookup_queued();
    std::unique_lock lock(mu_);
    const auto wait = connected_ ? std::min(settings_.poll, settings_.lease / 3) : std::chrono::milliseconds(kReconnectInterval);
    cv_.wait_for(lock, stop, wait, [&] { return poked_; });
    poked_ = false;
  }
}

void RemoteTier::verify_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    ToVerify item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, stop, [&] { return !to_verify_.empty(); });
      if (to_verify_.empty()) return;
      item = std::move(to_verify_.front());
      to_verify_.pop_front();
    }
    GateResult gate;
    const auto started = std::chrono::steady_clock::now();
    try {
      gate = verifier_->verify(item.record);
    } catch (const std::exception& e) {
      gate = {false, e.what()};
    }
    const auto took_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    const std::string line = item.record.key_line;
    if (gate.passed) {
      spdlog::info("remote tier: the record for {} passed this machine's gate in {} ms", line, took_ms);
      import(item.job_key, item.record);
    } else {
      counters_.add_rejected(to_string(RemoteRejection::failed_gate));
      spdlog::warn("remote tier: the record for {} failed this machine's gate in {} ms ({}); rejected", line, took_ms,
                   gate.detail);
    }
    const std::lock_guard lock(mu_);
    verifying_.erase(line);
    if (!gate.passed) refused_[line] = item.value_hash;
  }
}

void RemoteTier::save_pending() {
  nlohmann::json keys = nlohmann::json::array();
  {
    const std::lock_guard lock(mu_);
    if (pending_push_.empty() && !pending_saved_) return;
    for (const auto& k : pending_push_) keys.push_back(k);
    pending_saved_ = !pending_push_.empty();
  }
  queue_.put_meta(kPendingMetaKey, keys.dump(), [](const CommitResult& r) {
    if (!r.committed) spdlog::warn("remote tier: the keys waiting to be pushed were not saved: {}", r.error);
  });
}

std::optional<Record> RemoteTier::read_local(const std::string& line) const {
  const lmdb::Txn txn(queue_.cache_env(), lmdb::Access::read_only);
  const auto dbi = lmdb::open_db(txn, "records", false);
  if (!dbi) return std::nullopt;
  const auto bytes = lmdb::get(txn, *dbi, line);
  if (!bytes) return std::nullopt;
  auto decoded = deserialize_record(*bytes);
  if (auto* r = std::get_if<Record>(&decoded)) return std::move(*r);
  return std::nullopt;
}

void RemoteTier::push_pending() {
  std::vector<std::string> keys;
  {
    const std::lock_guard lock(mu_);
    keys.assign(pending_push_.begin(), pending_push_.end());
  }
  if (keys.empty()) return;
  if (!connected_) {
    save_pending();  // the link is down: keep the list where a restart finds it
    return;
  }
  for (std::size_t at = 0; at < keys.size(); at += kPipelineChunk) {
    std::vector<std::string> names, values, done;
    for (std::size_t i = at; i < std::min(keys.size(), at + kPipelineChunk); ++i) {
      std::optional<Record> r;
      try {
        r = read_local(keys[i]);
      } catch (const std::exception& e) {
        spdlog::warn("remote tier: cannot read {} from the cache: {}", keys[i], e.what());
      }
      done.push_back(keys[i]);  // a record that is gone (evicted) or unreadable is not pushed
      // Nor is a vendor verdict: the fleet learns of a search without a winner from its lease
      // (after_search), and the tier holds only records that a gate can run.
      if (!r || r->kind == RecordKind::vendor) continue;
      names.push_back(remote_record_key(settings_.key_prefix, keys[i]));
      values.push_back(encode_remote_value(*r));
    }
    std::vector<std::vector<std::string_view>> commands;
    for (std::size_t i = 0; i < names.size(); ++i) commands.push_back({"SET", names[i], values[i]});
    const bool ok = commands.empty() || with_link([&](RedisLink& link) {
      for (const Reply& reply : link.pipeline(commands))
        if (reply.kind == Reply::Kind::error) throw RedisDown("Redis refused a record: " + reply.text);
    });
    if (!ok) {
      save_pending();
      return;
    }
    counters_.add(RemoteCounter::pushes, names.size());
    const std::lock_guard lock(mu_);
    for (const auto& k : done) pending_push_.erase(k);
  }
  save_pending();
}

void RemoteTier::renew_leases() {
  std::vector<std::string> keys;
  {
    const std::lock_guard lock(mu_);
    if (held_.empty() || Clock::now() < next_renewal_) return;
    next_renewal_ = Clock::now() + settings_.lease / 3;
    for (const auto& [k, t] : held_) keys.push_back(k);
  }
  std::vector<std::string> lost;
  with_link([&](RedisLink& link) {
    for (const auto& k : keys)
      if (!leases_.renew(link, k)) lost.push_back(k);
  });
  for (const auto& k : lost) {
    counters_.add(RemoteCounter::leases_lost);
    spdlog::warn("remote tier: the lease on {} expired while this daemon searched it; another daemon may search it too", k);
    const std::lock_guard lock(mu_);
    held_.erase(k);
  }
}

std::string RemoteTier::full_line(const std::string& job_key) const {
  const auto parsed = parse_op_key(job_key);  // any operator's (issue 33)
  const auto* key = std::get_if<OpKey>(&parsed);
  if (key == nullptr) return {};
  return std::visit(
      [&](const auto& k) {
        if (k.device) return k.full_line();
        return home_ ? k.with_device(*home_).full_line() : std::string();
      },
      *key);
}

void RemoteTier::lookup_queued() {
  if (!connected_) return;
  const auto now = Clock::now();
  bool scan = false, rescan = false;
  {
    const std::lock_guard lock(mu_);
    rescan = catch_up_ || now >= next_rescan_;
    scan = rescan || scan_requested_;
    scan_requested_ = catch_up_ = false;
    if (rescan) next_rescan_ = now + kRescanPolls * settings_.poll;
  }
  std::vector<Job> jobs;
  if (scan) {
    try {
      jobs = queue_.top_jobs(kLookupWindow);
    } catch (const std::exception& e) {
      spdlog::warn("remote tier: cannot read the queue: {}", e.what());
    }
  }
  std::vector<std::pair<std::string, std::string>> want;  // job key, full line
  {
    const std::lock_guard lock(mu_);
    bound(looked_up_);
    const auto take = [&](const std::string& job_key, std::string line) {
      if (unverified_.contains(line) || verifying_.contains(line)) return;
      looked_up_[line] = now;
      want.emplace_back(job_key, std::move(line));
    };
    for (const Job& job : jobs) {
      if (job.state != JobState::queued) continue;
      std::string line = full_line(job.key);
      if (line.empty() || (!rescan && looked_up_.contains(line))) continue;
      take(job.key, std::move(line));
    }
    // Keys another daemon searches: their records are due any moment, so they are looked up every poll.
    for (const auto& [line, holder] : waited_) {
      const auto it = looked_up_.find(line);
      if (it == looked_up_.end() || now - it->second >= settings_.poll) take(line, line);
    }
  }
  for (std::size_t at = 0; at < want.size(); at += kPipelineChunk) {
    std::vector<std::string> names;
    for (std::size_t i = at; i < std::min(want.size(), at + kPipelineChunk); ++i)
      names.push_back(remote_record_key(settings_.key_prefix, want[i].second));
    std::vector<std::vector<std::string_view>> commands;
    for (const auto& n : names) commands.push_back({"GET", n});
    std::vector<Reply> replies;
    if (!with_link([&](RedisLink& link) { replies = link.pipeline(commands); })) return;
    counters_.add(RemoteCounter::lookups, names.size());
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (replies[i].kind != Reply::Kind::string) continue;
      counters_.add(RemoteCounter::hits);
      take_value(want[at + i].first, want[at + i].second, replies[i].text);
    }
  }
}

void RemoteTier::take_value(const std::string& job_key, const std::string& line, const std::string& value) {
  const std::uint64_t hash = hash_of(value);
  {
    const std::lock_guard lock(mu_);
    if (const auto it = refused_.find(line); it != refused_.end() && it->second == hash) return;  // counted once
  }
  RemoteDecode decoded = decode_remote_value(value, line, local_);
  const auto refuse = [&](std::string_view reason, bool rejected) {
    if (rejected) {
      counters_.add_rejected(reason);
      spdlog::warn("remote tier: the value stored for {} was rejected ({}); skipped", line, reason);
    } else {
      counters_.add_mismatched(reason);
      spdlog::info("remote tier: the record stored for {} does not match this machine ({}); skipped", line, reason);
    }
    const std::lock_guard lock(mu_);
    bound(refused_);
    refused_[line] = hash;
  };
  if (const auto* r = std::get_if<RemoteRejection>(&decoded)) return refuse(to_string(*r), true);
  if (const auto* m = std::get_if<RemoteMismatch>(&decoded)) return refuse(to_string(*m), false);
  Record& record = std::get<Record>(decoded);
  {
    const std::lock_guard lock(mu_);
    waited_.erase(line);
  }
  if (settings_.trust == RemoteTrust::trusted) return import(job_key, record);
  if (const auto why = verifier_->unavailable()) {
    counters_.add(RemoteCounter::unverified);
    spdlog::warn("remote tier: the record for {} is held back: {}", line, *why);
    const std::lock_guard lock(mu_);
    bound(unverified_);
    unverified_[line] = *why;
    return;
  }
  {
    const std::lock_guard lock(mu_);
    verifying_.insert(line);
    to_verify_.push_back({job_key, std::move(record), hash});
  }
  cv_.notify_all();
}

void RemoteTier::import(const std::string& job_key, const Record& record) {
  std::uint64_t generation = 0;
  try {
    {
      const std::lock_guard lock(mu_);
      in_tier_.insert(record.key_line);
    }
    generation = queue_.commit_winner(job_key, record);
  } catch (const std::exception& e) {
    const std::lock_guard lock(mu_);
    in_tier_.erase(record.key_line);
    spdlog::warn("remote tier: the record for {} could not be stored locally: {}", record.key_line, e.what());
    return;
  }
  counters_.add(RemoteCounter::imports);
  spdlog::info("imported {} from the fleet's tier (generation {})", record.key_line, generation);
  if (imported_) imported_(record.key_line, generation);  // its `published` notice reaches queue_push() here
  const std::lock_guard lock(mu_);
  in_tier_.erase(record.key_line);
}

FleetDecision RemoteTier::before_search(const std::string& full_key) {
  std::optional<LeaseAnswer> answer;
  if (!with_link([&](RedisLink& link) { answer = leases_.acquire(link, full_key); })) {
    counters_.add(RemoteCounter::searched_unleased);
    return {FleetDecision::Kind::search, {}};
  }
  const std::lock_guard lock(mu_);
  using Outcome = LeaseAnswer::Outcome;
  switch (answer->outcome) {
    case Outcome::taken:
      counters_.add(RemoteCounter::leases_taken);
      if (waited_.erase(full_key) > 0) {
        counters_.add(RemoteCounter::lease_takeovers);
        spdlog::info("remote tier: took over {} (its earlier searcher stopped renewing its lease)", full_key);
      }
      held_[full_key] = Clock::now();
      return {FleetDecision::Kind::search, {}};
    case Outcome::held_elsewhere:
      counters_.add(RemoteCounter::lease_waits);
      bound(waited_);
      waited_[full_key] = answer->holder;
      return {FleetDecision::Kind::wait, fmt::format("{} searches it (lease for {} ms more)", answer->holder,
                                                     answer->left.count())};
    case Outcome::record_exists:
      if (refused_.contains(full_key)) {
        // The tier's record was refused here (another environment, or a bad value): waiting for it
        // would wait forever, so this daemon searches the key itself, without a lease.
        counters_.add(RemoteCounter::searched_unleased);
        waited_.erase(full_key);
        spdlog::info("remote tier: the fleet's record for {} cannot be used here; searching it on this machine",
                     full_key);
        return {FleetDecision::Kind::search, {}};
      }
      looked_up_.erase(full_key);
      waited_[full_key] = "the fleet's tier";  // looked up every poll until imported
      poked_ = scan_requested_ = true;
      cv_.notify_all();
      return {FleetDecision::Kind::wait, "its record is in the fleet's tier"};
    case Outcome::finished:
      counters_.add(RemoteCounter::finished_elsewhere);
      waited_.erase(full_key);
      return {FleetDecision::Kind::finished, answer->holder};
  }
  return {FleetDecision::Kind::search, {}};
}

void RemoteTier::after_search(const std::string& full_key, const Record* winner, const std::string& done_reason) {
  {
    const std::lock_guard lock(mu_);
    held_.erase(full_key);
  }
  const std::string value = winner != nullptr ? encode_remote_value(*winner) : std::string();
  const bool ok = with_link([&](RedisLink& link) {
    if (winner != nullptr || !done_reason.empty()) leases_.finish(link, full_key, value, done_reason);
    else leases_.release(link, full_key);
  });
  if (ok && winner != nullptr) counters_.add(RemoteCounter::pushes);
  if (!ok && winner != nullptr) {
    const std::lock_guard lock(mu_);
    if (pending_push_.size() < kMaxPendingPushes) pending_push_.insert(full_key);
  }
}

protocol::RemoteStatus RemoteTier::status() const {
  protocol::RemoteStatus s;
  s.url = login_.endpoint.url();
  s.connected = connected_.load();
  s.trust = std::string(to_string(settings_.trust));
  s.prefix = settings_.key_prefix;
  s.owner = leases_.owner();
  s.lease_ms = settings_.lease.count();
  const auto why = verifier_->unavailable();
  s.gate = settings_.trust == RemoteTrust::trusted ? "not needed (trusted)"
           : why                                   ? "unavailable: " + *why
                                                   : "this machine's GPU";
  {
    const std::lock_guard lock(mu_);
    s.last_error = last_error_;
    s.leases_held = held_.size();
    s.pending_pushes = pending_push_.size();
    s.verifying = verifying_.size();
    s.held_back = unverified_.size();
  }
  s.counters = counters_.counts();
  return s;
}

std::string RemoteTier::prometheus_text() const { return counters_.prometheus_text(connected_.load()); }

}  // namespace kd::daemon
