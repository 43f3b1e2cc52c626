// The fleet's lease protocol (daemon/src/remote/remote_leases.hpp) on a real redis-server: one
// holder per key, results seen by waiters, and a holder killed with SIGKILL losing its key to the
// next daemon within the lease time.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "redis_server.hpp"
#include "remote/remote_leases.hpp"
#include "remote/remote_value.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

using namespace std::chrono_literals;
using Outcome = LeaseAnswer::Outcome;

const std::string kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

RedisLogin login(const test::RedisServer& redis) {
  RedisLogin l;
  l.endpoint = std::get<RemoteEndpoint>(parse_remote_url(redis.url()));
  l.timeout = 500ms;
  return l;
}

TEST(RemoteLeases, OneHolderPerKeyAndOthersWait) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  RedisLink link(login(redis));
  const LeaseBook a("t", "daemon-a", 5s), b("t", "daemon-b", 5s), c("t", "daemon-c", 5s);
  EXPECT_EQ(a.acquire(link, kKey).outcome, Outcome::taken);
  for (const LeaseBook* other : {&b, &c}) {
    const LeaseAnswer w = other->acquire(link, kKey);
    EXPECT_EQ(w.outcome, Outcome::held_elsewhere);
    EXPECT_EQ(w.holder, "daemon-a");
    EXPECT_GT(w.left.count(), 0);
  }
  EXPECT_TRUE(a.renew(link, kKey));
  EXPECT_FALSE(b.renew(link, kKey)) << "only the holder renews";
  EXPECT_EQ(a.acquire(link, kKey).outcome, Outcome::taken) << "the holder asking again keeps its lease";
}

TEST(RemoteLeases, WaitersSeeTheRecordOrTheDoneMarkerNeverAFreeKey) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  RedisLink link(login(redis));
  const LeaseBook a("t", "daemon-a", 5s), b("t", "daemon-b", 5s);
  ASSERT_EQ(a.acquire(link, kKey).outcome, Outcome::taken);
  Record r;
  r.key_line = kKey;
  r.cubin = "cubin";
  a.finish(link, kKey, encode_remote_value(r), "");
  EXPECT_EQ(b.acquire(link, kKey).outcome, Outcome::record_exists);

  const std::string k2 = std::string(kKey).replace(kKey.find("n=16"), 4, "n=32");
  ASSERT_EQ(a.acquire(link, k2).outcome, Outcome::taken);
  a.finish(link, k2, "", "no candidate beat the baseline");
  const LeaseAnswer done = b.acquire(link, k2);
  EXPECT_EQ(done.outcome, Outcome::finished);
  EXPECT_EQ(done.holder, "no candidate beat the baseline");
}

TEST(RemoteLeases, AReleasedLeaseGoesToTheNextDaemon) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  RedisLink link(login(redis));
  const LeaseBook a("t", "daemon-a", 5s), b("t", "daemon-b", 5s);
  ASSERT_EQ(a.acquire(link, kKey).outcome, Outcome::taken);
  b.release(link, kKey);  // not b's: nothing happens
  EXPECT_EQ(b.acquire(link, kKey).outcome, Outcome::held_elsewhere);
  a.release(link, kKey);
  EXPECT_EQ(b.acquire(link, kKey).outcome, Outcome::taken);
}

// A searcher in a child process holds the lease and renews it every third of its 900 ms; SIGKILL
// stops it mid-search. The next daemon takes the key within the lease time, not before the lease
// would have lapsed.
TEST(RemoteLeases, AKilledSearcherLosesItsKeyWithinTheLeaseTime) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  constexpr auto kLease = 900ms;
  const RedisLogin l = login(redis);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      RedisLink link(l);
      const LeaseBook searcher("t", "searcher", kLease);
      if (searcher.acquire(link, kKey).outcome != Outcome::taken) ::_exit(2);
      (void)!::write(ready[1], "x", 1);
      for (;;) {
        std::this_thread::sleep_for(kLease / 3);
        if (!searcher.renew(link, kKey)) ::_exit(3);
      }
    } catch (...) {
      ::_exit(4);
    }
  }
  char x = 0;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  RedisLink link(l);
  const LeaseBook waiter("t", "waiter", kLease);
  // While the searcher lives, its renewals keep the key for well past one lease.
  const auto alive_until = std::chrono::steady_clock::now() + 2 * kLease;
  while (std::chrono::steady_clock::now() < alive_until) {
    ASSERT_EQ(waiter.acquire(link, kKey).outcome, Outcome::held_elsewhere);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  ::waitpid(child, nullptr, 0);
  const auto killed = std::chrono::steady_clock::now();
  Outcome o = Outcome::held_elsewhere;
  while (o != Outcome::taken && std::chrono::steady_clock::now() - killed < 5 * kLease) {
    o = waiter.acquire(link, kKey).outcome;
    if (o != Outcome::taken) std::this_thread::sleep_for(20ms);
  }
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(o, Outcome::taken);
  EXPECT_LE(took, kLease + 200ms) << "the job moves on within the lease time";
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(RemoteLeases, AnUnreachableRedisIsRedisDownNamingTheEndpoint) {
  test::TempDir dir;
  RedisLogin l;
  {
    test::RedisServer redis(dir.path() / "redis");
    l = login(redis);
  }  // killed: nothing listens on its port now
  try {
    RedisLink link(l);
    FAIL() << "connected to nothing";
  } catch (const RedisDown& e) {
    EXPECT_NE(std::string(e.what()).find(l.endpoint.url()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kd::daemon
