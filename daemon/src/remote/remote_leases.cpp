#include "remote/remote_leases.hpp"

#include <unistd.h>

#include <random>

#include <fmt/format.h>

#include "remote/remote_value.hpp"

namespace kd::daemon {
namespace {

// KEYS: record, done, lease. ARGV: owner, lease ms.
constexpr std::string_view kAcquire = R"lua(
if redis.call('exists', KEYS[1]) == 1 then return {'record'} end
local done = redis.call('get', KEYS[2])
if done then return {'done', done} end
if redis.call('set', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'taken'} end
local holder = redis.call('get', KEYS[3])
if holder == ARGV[1] then redis.call('pexpire', KEYS[3], ARGV[2]) return {'taken'} end
return {'held', holder or '', redis.call('pttl', KEYS[3])}
)lua";

// KEYS: lease. ARGV: owner, lease ms.
constexpr std::string_view kRenew = R"lua(
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
)lua";

// KEYS: lease. ARGV: owner.
constexpr std::string_view kRelease = R"lua(
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
)lua";

void require_ok(const Reply& r, std::string_view what) {
  if (r.kind == Reply::Kind::error) throw RedisDown(fmt::format("Redis refused {}: {}", what, r.text));
}

}  // namespace

std::string lease_owner_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  std::random_device rd;
  const std::uint64_t nonce = (std::uint64_t{rd()} << 32) ^ rd();
  return fmt::format("{}:{}:{:016x}", host, ::getpid(), nonce);
}

LeaseBook::LeaseBook(std::string prefix, std::string owner, std::chrono::milliseconds lease)
    : prefix_(std::move(prefix)), owner_(std::move(owner)), lease_(lease) {}

std::string LeaseBook::done_key(std::string_view line) const { return prefix_ + ":done:" + std::string(line); }

LeaseAnswer LeaseBook::acquire(RedisLink& link, std::string_view line) const {
  const std::string record = remote_record_key(prefix_, line), done = done_key(line),
                    lease = remote_lease_key(prefix_, line), ms = std::to_string(lease_.count());
  const Reply r = link.command({"EVAL", kAcquire, "3", record, done, lease, owner_, ms});
  require_ok(r, "the lease script");
  if (r.kind != Reply::Kind::array || r.elements.empty()) throw RedisDown("Redis: unexpected reply to the lease script");
  const std::string& tag = r.elements[0].text;
  LeaseAnswer a;
  if (tag == "record") a.outcome = LeaseAnswer::Outcome::record_exists;
  else if (tag == "taken") a.outcome = LeaseAnswer::Outcome::taken;
  else if (tag == "done") {
    a.outcome = LeaseAnswer::Outcome::finished;
    if (r.elements.size() > 1) a.holder = r.elements[1].text;
  } else {
    a.outcome = LeaseAnswer::Outcome::held_elsewhere;
    if (r.elements.size() > 1) a.holder = r.elements[1].text;
    if (r.elements.size() > 2) a.left = std::chrono::milliseconds(std::max<long long>(0, r.elements[2].integer));
  }
  return a;
}

bool LeaseBook::renew(RedisLink& link, std::string_view line) const {
  const std::string lease = remote_lease_key(prefix_, line), ms = std::to_string(lease_.count());
  const Reply r = link.command({"EVAL", kRenew, "1", lease, owner_, ms});
  require_ok(r, "the lease renewal");
  return r.kind == Reply::Kind::integer && r.integer == 1;
}

void LeaseBook::finish(RedisLink& link, std::string_view line, std::string_view record_value,
                       std::string_view reason) const {
  const std::string lease = remote_lease_key(prefix_, line);
  std::vector<std::vector<std::string_view>> commands;
  const std::string record_key = remote_record_key(prefix_, line), done = done_key(line),
                    ttl = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kDoneMarkerLifetime).count());
  if (!record_value.empty()) commands.push_back({"SET", record_key, record_value});
  else commands.push_back({"SET", done, reason, "EX", ttl});
  commands.push_back({"EVAL", kRelease, "1", lease, owner_});
  for (const Reply& r : link.pipeline(commands)) require_ok(r, "the search's result");
}

void LeaseBook::release(RedisLink& link, std::string_view line) const {
  const std::string lease = remote_lease_key(prefix_, line);
  require_ok(link.command({"EVAL", kRelease, "1", lease, owner_}), "the lease release");
}

}  // namespace kd::daemon
