// The remote tier in the daemon's own scheduler and queue, on a real redis-server: three daemons'
// queues (three cache directories) with the scheduler's runners scripted as in scheduler_test.cpp
// (a test double of the search, which needs a GPU). A key missed on every daemon is searched once;
// the others import the winner. Records that need this machine's gate are held back where it
// cannot run; damaged values are rejected one by one.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "redis_server.hpp"
#include "remote/remote_tier.hpp"
#include "sched/scheduler.hpp"
#include "store/cache_store.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

using namespace std::chrono_literals;

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};

std::string key(int n) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" "
         "sms=132";
}

Record record_for(const std::string& line) {
  Record r;
  r.key_line = line;
  r.cubin = std::string(4096, 'c');
  r.proposer = "builtin";
  r.candidate_us = 10;
  r.baseline_us = 12;
  // Made with this machine's libraries, as a fleet of one GPU model and one software image has it.
  const LocalEnvironment here = local_environment(kH100);
  r.driver_version = here.driver_version;
  r.cublas_version = static_cast<int>(here.cublaslt_version);
  return r;
}

// Counts its searches; each takes `search_time` and wins.
class CountingRunner final : public JobRunner {
public:
  CountingRunner(std::atomic<int>& searches, std::chrono::milliseconds search_time)
      : searches_(searches), search_time_(search_time) {}
  DevicePart device() const override { return kH100; }
  JobOutcome run(const Job& job, const Budgets&, Progress&, std::stop_token stop) override {
    ++searches_;
    const auto until = std::chrono::steady_clock::now() + search_time_;
    while (std::chrono::steady_clock::now() < until)
      if (stop.stop_requested()) return {JobOutcome::Kind::stopped, std::nullopt, "stopped"};
      else std::this_thread::sleep_for(5ms);
    return {JobOutcome::Kind::winner, record_for(job.key), ""};
  }

private:
  std::atomic<int>& searches_;
  std::chrono::milliseconds search_time_;
};

// Counts its searches; each takes `search_time` and ends without a winner (cuBLAS kept).
class LosingRunner final : public JobRunner {
public:
  LosingRunner(std::atomic<int>& searches, std::chrono::milliseconds search_time)
      : searches_(searches), search_time_(search_time) {}
  DevicePart device() const override { return kH100; }
  JobOutcome run(const Job&, const Budgets&, Progress&, std::stop_token) override {
    ++searches_;
    std::this_thread::sleep_for(search_time_);
    return {JobOutcome::Kind::no_improvement, std::nullopt, "nothing beat cuBLAS (test)"};
  }

private:
  std::atomic<int>& searches_;
  std::chrono::milliseconds search_time_;
};

// Searches until stopped and never finishes (a long search, for the kill test).
class EndlessRunner final : public JobRunner {
public:
  DevicePart device() const override { return kH100; }
  JobOutcome run(const Job&, const Budgets&, Progress&, std::stop_token stop) override {
    while (!stop.stop_requested()) std::this_thread::sleep_for(5ms);
    return {JobOutcome::Kind::stopped, std::nullopt, "stopped"};
  }
};

Config fleet_config(const test::RedisServer& redis, const std::filesystem::path& cache, RemoteTrust trust) {
  Config c;
  c.cache_dir = cache;
  c.budgets = {8, 256, 600, 1000};
  c.restart_backoff = 1ms;
  c.max_attempts = 3;
  c.workers = "none";
  c.remote.endpoint = std::get<RemoteEndpoint>(parse_remote_url(redis.url()));
  c.remote.key_prefix = "fleet";
  c.remote.trust = trust;
  c.remote.lease = 2000ms;
  c.remote.poll = 50ms;
  c.remote.timeout = 500ms;
  return c;
}

// One daemon's queue, scheduler and tier (the wiring of daemon.cpp).
struct Member {
  Config config;
  JobQueue queue;
  Metrics metrics;
  std::unique_ptr<RemoteTier> tier;
  std::unique_ptr<Scheduler> scheduler;

  Member(const Config& c, std::vector<std::unique_ptr<JobRunner>> runners,
         const std::string& why_no_gpu = "no search backend: no GPU in this test")
      : config(c), queue(c.cache_dir) {
    tier = std::make_unique<RemoteTier>(config, queue, kH100, make_record_verifier(config, why_no_gpu),
                                        RemoteTier::ImportedFn{});
    scheduler = std::make_unique<Scheduler>(config, queue, metrics, std::move(runners),
                                            [this](const std::string& k, std::uint64_t) { tier->queue_push(k); });
    scheduler->set_fleet_hooks(tier->fleet_hooks());
    tier->start();
    scheduler->start();
  }
  ~Member() {
    scheduler->stop();
    tier->stop();
    queue.stop();
  }
  void miss(const std::string& k) {
    std::promise<void> done;
    queue.report_misses({{k, 1}}, [&](const CommitResult&) { done.set_value(); });
    done.get_future().wait();
    tier->poke();
    scheduler->notify_work();
  }
  std::optional<JobState> state(const std::string& k) {
    const auto j = queue.find(k);
    return j ? std::optional(j->state) : std::nullopt;
  }
};

using test::eventually;

std::uint64_t rejected_total(const Member& m) {
  const nlohmann::json counters = m.tier->counters().to_json();
  std::uint64_t total = 0;
  for (const auto& entry : counters["rejected"].items()) total += entry.value().get<std::uint64_t>();
  return total;
}

RedisLink link_to(const test::RedisServer& redis) {
  RedisLogin l;
  l.endpoint = std::get<RemoteEndpoint>(parse_remote_url(redis.url()));
  return RedisLink(l);
}

// Three trusting daemons sharing `redis` (caches dir/cache0..2), each with a Runner of `searches`
// whose searches take 600 ms, and each missing `k`.
template <class Runner>
std::vector<std::unique_ptr<Member>> fleet_missing(const test::RedisServer& redis, const std::filesystem::path& dir,
                                                   std::atomic<int>& searches, const std::string& k) {
  std::vector<std::unique_ptr<Member>> fleet;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::unique_ptr<JobRunner>> runners;
    runners.push_back(std::make_unique<Runner>(searches, 600ms));
    fleet.push_back(std::make_unique<Member>(
        fleet_config(redis, dir / ("cache" + std::to_string(i)), RemoteTrust::trusted), std::move(runners)));
  }
  for (auto& m : fleet) m->miss(k);
  return fleet;
}

bool all_done(std::vector<std::unique_ptr<Member>>& fleet, const std::string& k) {
  return eventually([&] {
    for (auto& m : fleet)
      if (m->state(k) != JobState::done) return false;
    return true;
  });
}

TEST(RemoteTier, AKeyMissedOnEveryDaemonIsSearchedOnceAndImportedByTheOthers) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  std::atomic<int> searches{0};
  const std::string k = key(16);
  auto fleet = fleet_missing<CountingRunner>(redis, dir.path(), searches, k);
  ASSERT_TRUE(all_done(fleet, k)) << "every daemon ends with the record";
  EXPECT_EQ(searches.load(), 1) << "one search across the fleet";
  std::uint64_t imports = 0, waits = 0, taken = 0;
  for (auto& m : fleet) {
    imports += m->tier->counters().get(RemoteCounter::imports);
    waits += m->tier->counters().get(RemoteCounter::lease_waits);
    taken += m->tier->counters().get(RemoteCounter::leases_taken);
  }
  EXPECT_EQ(taken, 1u);
  EXPECT_EQ(imports, 2u) << "the two others imported the winner instead of searching";
  EXPECT_GE(waits, 1u);
  auto link = link_to(redis);
  EXPECT_EQ(link.command({"EXISTS", remote_lease_key("fleet", k)}).integer, 0) << "the lease was released";
  EXPECT_EQ(link.command({"EXISTS", remote_record_key("fleet", k)}).integer, 1);
}

// A key searched without a winner: one daemon searches it, and every daemon's cache ends with a
// vendor verdict (its own or the fleet's word), so no daemon's clients report it again. Verdicts
// stay out of the tier.
TEST(RemoteTier, AKeySearchedWithoutAWinnerLeavesAVendorVerdictOnEveryDaemon) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  std::atomic<int> searches{0};
  const std::string k = key(24);
  auto fleet = fleet_missing<LosingRunner>(redis, dir.path(), searches, k);
  ASSERT_TRUE(all_done(fleet, k));
  EXPECT_EQ(searches.load(), 1) << "one search across the fleet";
  int elsewhere = 0;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    CacheReader reader(dir.path() / ("cache" + std::to_string(i)));
    reader.refresh();
    const auto found = reader.lookup(k);
    ASSERT_TRUE(std::holds_alternative<Record>(found)) << "daemon " << i;
    EXPECT_EQ(std::get<Record>(found).kind, RecordKind::vendor);
    if (fleet[i]->queue.find(k)->reason.starts_with("searched by another daemon of the fleet")) ++elsewhere;
  }
  EXPECT_EQ(elsewhere, 2);
  auto link = link_to(redis);
  EXPECT_EQ(link.command({"EXISTS", remote_record_key("fleet", k)}).integer, 0) << "verdicts are not pushed";
}

// The searching daemon (its scheduler and tier in a child process) is killed with SIGKILL mid-search;
// the daemon that waited for it takes the job over within the lease time and searches it.
TEST(RemoteTier, KillingTheSearchingDaemonHandsTheJobToAnotherWithinTheLeaseTime) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  const std::string k = key(80);
  Config c = fleet_config(redis, dir.path() / "searcher", RemoteTrust::trusted);
  c.remote.lease = 1000ms;
  const pid_t searcher = ::fork();  // before this process starts any thread
  if (searcher == 0) {
    try {
      std::vector<std::unique_ptr<JobRunner>> runners;
      runners.push_back(std::make_unique<EndlessRunner>());
      Member m(c, std::move(runners));
      m.miss(k);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  auto link = link_to(redis);
  ASSERT_TRUE(eventually([&] { return link.command({"EXISTS", remote_lease_key("fleet", k)}).integer == 1; }))
      << "the child searches under the lease";

  std::atomic<int> searches{0};
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<CountingRunner>(searches, 50ms));
  c.cache_dir = dir.path() / "waiter";
  Member waiter(c, std::move(runners));
  waiter.miss(k);
  ASSERT_TRUE(eventually([&] { return waiter.tier->counters().get(RemoteCounter::lease_waits) >= 2; }));
  EXPECT_EQ(searches.load(), 0) << "no second search while the searcher lives";
  ASSERT_EQ(::kill(searcher, SIGKILL), 0);
  ::waitpid(searcher, nullptr, 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return searches.load() == 1; }));
  const auto handed_over = std::chrono::steady_clock::now() - killed;
  EXPECT_LE(handed_over, c.remote.lease + 500ms) << "within the lease time (plus a poll and scheduling)";
  ASSERT_TRUE(eventually([&] { return waiter.state(k) == JobState::done; }));
  EXPECT_EQ(waiter.tier->counters().get(RemoteCounter::lease_takeovers), 1u);
}

TEST(RemoteTier, RecordsThatNeedTheGateAreHeldBackWhereItCannotRunAndSaidSo) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  const std::string k = key(32);
  link_to(redis).command({"SET", remote_record_key("fleet", k), encode_remote_value(record_for(k))});
  Member m(fleet_config(redis, dir.path() / "cache", RemoteTrust::verify), {}, "no search backend: no GPU here");
  m.miss(k);
  ASSERT_TRUE(eventually([&] { return m.tier->counters().get(RemoteCounter::unverified) == 1; }))
      << nlohmann::json(m.tier->status()).dump();
  EXPECT_EQ(m.state(k), JobState::queued) << "not published without this machine's gate";
  EXPECT_EQ(m.tier->counters().get(RemoteCounter::imports), 0u);
  const protocol::RemoteStatus status = m.tier->status();
  EXPECT_EQ(status.held_back, 1u);
  EXPECT_NE(status.gate.find("unavailable"), std::string::npos) << status.gate;
  EXPECT_NE(status.gate.find("no GPU here"), std::string::npos) << status.gate;
}

// Every kind of bad value the tier can hold, under keys this daemon misses; one good record among
// them is still imported, and each bad one is counted once under its name.
TEST(RemoteTier, DamagedAndForgedValuesAreRejectedOneByOneByName) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  auto link = link_to(redis);
  std::mt19937_64 rng(31);
  const std::string good_key = key(1);
  std::vector<std::string> keys{good_key};
  std::vector<std::vector<std::string_view>> sets;
  std::vector<std::string> names, values;
  const auto put = [&](const std::string& k, std::string v) {
    names.push_back(remote_record_key("fleet", k));
    values.push_back(std::move(v));
    keys.push_back(k);
  };
  put(good_key, encode_remote_value(record_for(good_key)));
  keys.pop_back();
  int n = 2;
  const std::string valid = encode_remote_value(record_for(key(999)));
  for (int i = 0; i < 40; ++i) {
    std::string junk(rng() % 200, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    put(key(n++), junk);                                          // garbage: bad_magic or truncated
    put(key(n++), valid.substr(0, rng() % valid.size()));         // truncated
    std::string flipped = valid;
    flipped[30 + rng() % (flipped.size() - 30)] ^= 0x20;
    put(key(n++), flipped);                                        // checksum_mismatch (or a key's byte)
    put(key(n++), valid);                                          // another key's value: wrong_key
  }
  for (std::size_t i = 0; i < names.size(); ++i) sets.push_back({"SET", names[i], values[i]});
  link.pipeline(sets);

  Member m(fleet_config(redis, dir.path() / "cache", RemoteTrust::trusted), {});
  for (const auto& k : keys) m.miss(k);
  ASSERT_TRUE(eventually([&] { return m.state(good_key) == JobState::done; }));
  ASSERT_TRUE(eventually([&] {
    return rejected_total(m) == keys.size() - 1;
  })) << keys.size() << " " << m.tier->counters().to_json().dump();
  const auto rejected = m.tier->counters().to_json()["rejected"];
  EXPECT_EQ(rejected.value("wrong_key", 0), 40) << rejected.dump();
  EXPECT_GE(rejected.value("truncated", 0), 40) << rejected.dump();
  EXPECT_GE(rejected.value("checksum_mismatch", 0), 1) << rejected.dump();
  EXPECT_EQ(m.tier->counters().get(RemoteCounter::imports), 1u);
  // Counted once: a later rescan finds the same values and counts nothing new.
  std::this_thread::sleep_for(3 * RemoteTier::kRescanPolls * 50ms);
  EXPECT_EQ(rejected_total(m), keys.size() - 1);
}

// A tier record this daemon refuses (here a damaged value; on a GPU, one made with other library
// versions) must not hold its job back for ever: the daemon searches the key itself.
TEST(RemoteTier, AKeyWhoseTierRecordIsRefusedIsSearchedHere) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  const std::string k = key(40);
  link_to(redis).command({"SET", remote_record_key("fleet", k), "not a record"});
  std::atomic<int> searches{0};
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<CountingRunner>(searches, 10ms));
  Member m(fleet_config(redis, dir.path() / "cache", RemoteTrust::trusted), std::move(runners));
  m.miss(k);
  ASSERT_TRUE(eventually([&] { return m.state(k) == JobState::done; })) << m.tier->counters().to_json().dump();
  EXPECT_EQ(searches.load(), 1);
  EXPECT_EQ(rejected_total(m), 1u);
  EXPECT_GE(m.tier->counters().get(RemoteCounter::searched_unleased), 1u);
}

TEST(RemoteTier, ARecordOfAnotherGpuIsSkippedNotImported) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  // The key names an H100; this daemon's GPU is an H100 too, but the value's record was made for
  // an H200 and stored (by a confused or hostile writer) under the H100 key.
  const std::string k = key(48);
  std::string h200 = k;
  h200.replace(h200.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA H200");
  Record r = record_for(h200);
  link_to(redis).command({"SET", remote_record_key("fleet", k), encode_remote_value(r)});
  Member m(fleet_config(redis, dir.path() / "cache", RemoteTrust::trusted), {});
  m.miss(k);
  ASSERT_TRUE(eventually([&] { return m.tier->counters().get(RemoteCounter::hits) >= 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(m.state(k), JobState::queued);
  EXPECT_EQ(m.tier->counters().to_json()["rejected"].value("wrong_key", 0), 1);
}

TEST(RemoteTier, RedisDownLeavesTheDaemonWorkingLocallyAndItCatchesUp) {
  test::TempDir dir;
  test::RedisServer redis(dir.path() / "redis");
  std::atomic<int> searches{0};
  std::vector<std::unique_ptr<JobRunner>> runners;
  runners.push_back(std::make_unique<CountingRunner>(searches, 50ms));
  Member m(fleet_config(redis, dir.path() / "cache", RemoteTrust::trusted), std::move(runners));
  ASSERT_TRUE(eventually([&] { return m.tier->status().connected; }));
  redis.kill();
  const std::string k = key(64);
  m.miss(k);
  ASSERT_TRUE(eventually([&] { return m.state(k) == JobState::done; })) << "searched locally without the tier";
  EXPECT_EQ(searches.load(), 1);
  EXPECT_GE(m.tier->counters().get(RemoteCounter::searched_unleased), 1u);
  // The job is done when its record is committed; the tier hears of the winner just after.
  EXPECT_TRUE(eventually([&] { return !m.tier->status().connected; }));
  EXPECT_TRUE(eventually([&] { return m.tier->status().pending_pushes == 1; }))
      << nlohmann::json(m.tier->status()).dump();
  redis.start();  // back, empty
  ASSERT_TRUE(eventually([&] {
    try {
      return link_to(redis).command({"EXISTS", remote_record_key("fleet", k)}).integer == 1;
    } catch (const RedisDown&) {
      return false;
    }
  })) << "the record published during the outage reaches the tier when it returns";
  // The push lands in Redis before the tier drops it from its pending list.
  EXPECT_TRUE(eventually([&] { return m.tier->status().pending_pushes == 0; }))
      << nlohmann::json(m.tier->status()).dump();
  EXPECT_GE(m.tier->counters().get(RemoteCounter::outages), 1u);
}

}  // namespace
}  // namespace kd::daemon
