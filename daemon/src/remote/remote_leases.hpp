// One search per key across the fleet: the lease protocol on Redis.
//
// A daemon about to search a key runs acquire(), one Lua script, so the checks and the take are
// atomic on the server:
//   1. the record is in the tier already          -> record_exists (import it, do not search);
//   2. another daemon of the fleet finished it     -> finished (its "<prefix>:done:<key>" marker:
//      searched and nothing beat the baseline, or the key cannot be searched);
//   3. SET "<prefix>:lease:<key>" owner NX PX lease -> taken (search it);
//   4. else                                         -> held_elsewhere (who, and for how long).
// The holder renews the lease every third of its length while it searches (renew: PEXPIRE only if
// the owner is still itself) and, when done, pushes the record or the done marker and releases the
// lease in one pipeline, so a waiter's next acquire sees the result, never a free key without one.
// A holder killed mid-search stops renewing; its lease expires after at most `lease`, and the next
// daemon whose acquire runs takes the job. The owner string (host:pid:random) is unique per daemon
// instance, so a restarted daemon never mistakes an old lease for its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "remote/redis_link.hpp"

namespace kd::daemon {

struct LeaseAnswer {
  enum class Outcome : std::uint8_t { taken, held_elsewhere, record_exists, finished };
  Outcome outcome = Outcome::taken;
  std::string holder;  // held_elsewhere: the owner; finished: the searcher's reason
  std::chrono::milliseconds left{0};  // held_elsewhere: the lease's remaining time
};

// This daemon instance's owner string: "<host>:<pid>:<16 hex digits of randomness>".
std::string lease_owner_id();

class LeaseBook {
public:
  LeaseBook(std::string prefix, std::string owner, std::chrono::milliseconds lease);

  // Each throws RedisDown when the link fails.
  LeaseAnswer acquire(RedisLink& link, std::string_view full_key_line) const;
  // False when the lease is no longer this owner's (it expired and another daemon took it).
  bool renew(RedisLink& link, std::string_view full_key_line) const;
  // Stores `record_value` (an encode_remote_value) or, when empty, the done marker with `reason`,
  // then releases this owner's lease; one round trip.
  void finish(RedisLink& link, std::string_view full_key_line, std::string_view record_value,
              std::string_view reason) const;
  // Releases this owner's lease without a result (the search was stopped or its worker lost).
  void release(RedisLink& link, std::string_view full_key_line) const;

  const std::string& owner() const noexcept { return owner_; }
  std::chrono::milliseconds lease() const noexcept { return lease_; }
  std::string done_key(std::string_view full_key_line) const;

private:
  std::string prefix_;
  std::string owner_;
  std::chrono::milliseconds lease_;
};

// How long a done marker stays: a later fleet (new drivers, new proposers) may search again.
inline constexpr std::chrono::hours kDoneMarkerLifetime{24 * 7};

}  // namespace kd::daemon
