// The dispatcher with no daemon: misses go into the void without a crash or a hang, and polling
// the cache generation picks up a record that another process (a forked child, the way the daemon
// is another process) publishes with CacheWriter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

#include "runtime/dispatcher.hpp"
#include "store/cache_store.hpp"
#include "support/commit_in_child.hpp"
#include "support/eventually.hpp"
#include "support/host_entry_loader.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;

CallKey key_for(std::int64_t m) {
  CallKey k;
  k.context = 0xABC;
  k.m = m;
  k.n = k.k = 64;
  k.lda = k.ldb = k.ldc = 64;
  return k;
}

std::string line_for(const CallKey& k) { return "fake gemm m=" + std::to_string(k.m); }

// Loads "records" without CUDA: the entry's first launch carries the record's grid, so the test
// can see which record was loaded.
std::unique_ptr<EntryLoader> host_loader() { return std::make_unique<test::HostEntryLoader>(line_for); }

Record record_for(const CallKey& k, std::uint32_t grid_x) {
  Record r;
  r.key_line = line_for(k);
  r.cubin = "not a real cubin " + std::to_string(grid_x);
  r.plan.launches.push_back({"kd_main", {grid_x, 1, 1}, {128, 1, 1}, 0});
  r.created_unix_s = grid_x;
  return r;
}

using test::commit_in_child;
using test::eventually;
using test::lookup_as_caller;

DispatcherOptions no_daemon_options(const test::TempDir& dir) {
  DispatcherOptions o;
  o.cache_dir = dir.path() / "cache";
  o.socket_path = dir.path() / "nobody-listens.sock";  // a daemon client that never connects
  o.poll_interval = 50ms;
  return o;
}

TEST(NoDaemon, MissesAreRememberedAndShutdownDoesNotHang) {
  test::TempDir dir;
  auto d = std::make_unique<Dispatcher>(no_daemon_options(dir), host_loader());
  const CallKey k = key_for(100);
  EXPECT_EQ(lookup_as_caller(*d, k).reason, FallbackReason::not_loaded);
  // No cache directory at all: the background thread resolves the key to cache_unavailable.
  EXPECT_TRUE(eventually([&] { return lookup_as_caller(*d, k).reason == FallbackReason::cache_unavailable; }));
  for (int i = 0; i < 5000; ++i) lookup_as_caller(*d, key_for(1000 + i));  // floods the queue: drops, no crash
  const auto start = std::chrono::steady_clock::now();
  d.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "shutdown hung";
}

TEST(NoDaemon, GenerationPollingPicksUpARecordPublishedByAnotherProcess) {
  test::TempDir dir;
  const auto opts = no_daemon_options(dir);
  { CacheWriter create(opts.cache_dir); }  // an empty cache, as after `kdctl` first ran
  Dispatcher d(opts, host_loader());
  const CallKey k = key_for(7);
  lookup_as_caller(d, k);
  ASSERT_TRUE(eventually([&] { return lookup_as_caller(d, k).reason == FallbackReason::no_entry; }));
  const std::uint64_t g0 = d.generation();

  ASSERT_EQ(commit_in_child(opts.cache_dir, {record_for(k, 11)}), 0);
  ASSERT_TRUE(eventually([&] { return lookup_as_caller(d, k).entry != nullptr; }))
      << "published record never loaded";
  EXPECT_GT(d.generation(), g0);
  {
    ThreadSlot* slot = EpochDomain::instance().this_thread();
    ReadGuard guard(*slot);
    EXPECT_EQ(d.lookup(k).entry->launches[0].grid[0], 11u);
  }

  // A second record for the same key is hot-swapped in.
  const std::uint64_t swaps0 = dispatcher_counters().swaps.load();
  ASSERT_EQ(commit_in_child(opts.cache_dir, {record_for(k, 22)}), 0);
  ASSERT_TRUE(eventually([&] {
    ThreadSlot* slot = EpochDomain::instance().this_thread();
    ReadGuard guard(*slot);
    const Entry* e = d.lookup(k).entry;
    return e != nullptr && e->launches[0].grid[0] == 22u;
  }));
  EXPECT_EQ(dispatcher_counters().swaps.load(), swaps0 + 1);
}

}  // namespace
}  // namespace kd
