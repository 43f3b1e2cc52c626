// Hot-swap under load: 8 threads look up continuously while one writer replaces entries 10,000
// times. Every lookup must see a complete entry; retired entries are freed while readers run, and
// only when safe (run this under -DKD_SANITIZE=thread and address as well).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "registry/epoch.hpp"
#include "registry/registry.hpp"

namespace kd {
namespace {

constexpr int kKeys = 64;
constexpr int kReaders = 8;
constexpr int kReplacements = 10000;

CallKey key_for(int i) {
  CallKey k;
  k.context = 0xC0FFEE;
  k.m = 128 + i;
  k.n = k.k = 256;
  k.lda = k.ldb = k.ldc = 256;
  return k;
}

// Every field a reader checks is derived from one id, so a torn or freed entry shows as a
// mismatch (and as a report under a sanitizer).
std::unique_ptr<Entry> make_entry(int key_index, std::uint64_t id) {
  auto e = std::make_unique<Entry>();
  e->key = key_for(key_index);
  e->state = EntryState::loaded;
  e->record_id = id;
  e->generation = id * 3 + 1;
  e->launch_count = 1 + static_cast<std::uint32_t>(id % kMaxLaunches);
  for (std::uint32_t i = 0; i < e->launch_count; ++i)
    e->launches[i].grid = {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(key_index), i};
  return e;
}

bool entry_is_complete(const Entry& e, int key_index) {
  if (e.state != EntryState::loaded || e.generation != e.record_id * 3 + 1) return false;
  if (e.launch_count != 1 + e.record_id % kMaxLaunches || !(e.key == key_for(key_index))) return false;
  for (std::uint32_t i = 0; i < e.launch_count; ++i) {
    const auto& g = e.launches[i].grid;
    if (g[0] != static_cast<std::uint32_t>(e.record_id) || g[1] != static_cast<std::uint32_t>(key_index) ||
        g[2] != i)
      return false;
  }
  return true;
}

void run_hot_swap() {
  Registry registry(16);  // small on purpose: the table also grows while readers run
  std::uint64_t next_id = 1;
  for (int i = 0; i < kKeys / 2; ++i) registry.publish(make_entry(i, next_id++));

  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};  // the writer starts once every reader runs (2-core CI machines)
  std::atomic<std::uint64_t> lookups{0}, found{0}, broken{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t)
    readers.emplace_back([&, t] {
      ThreadSlot* slot = EpochDomain::instance().this_thread();
      ready.fetch_add(1);
      if (slot == nullptr) {
        broken.fetch_add(1);
        return;
      }
      std::uint64_t n = 0, hits = 0, bad = 0;
      std::uint64_t last_id[kKeys] = {};
      for (int i = t; !stop.load(std::memory_order_relaxed); i = (i + 1) % kKeys) {
        ReadGuard guard(*slot);
        const CallKey k = key_for(i);
        const Entry* e = registry.lookup(k, hash_call_key(k));
        ++n;
        if (e == nullptr) continue;
        ++hits;
        if (!entry_is_complete(*e, i)) ++bad;
        if (e->record_id < last_id[i]) ++bad;  // a reader never goes back to an older entry
        last_id[i] = e->record_id;
      }
      lookups.fetch_add(n);
      found.fetch_add(hits);
      broken.fetch_add(bad);
    });

  while (ready.load() < kReaders) std::this_thread::yield();
  std::uint64_t freed_while_reading = 0;
  for (int r = 0; r < kReplacements; ++r) {
    const int key_index = r % kKeys;  // replaces existing keys and adds the other half
    registry.publish(make_entry(key_index, next_id++));
    if (r % 16 == 0) freed_while_reading += registry.reclaim();
  }
  stop.store(true);
  for (auto& th : readers) th.join();
  registry.reclaim();

  EXPECT_EQ(broken.load(), 0u) << "lookups saw incomplete, freed or older entries";
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_GT(found.load(), 0u);
  EXPECT_EQ(registry.size(), static_cast<std::size_t>(kKeys));
  EXPECT_EQ(registry.retired_total(), static_cast<std::uint64_t>(kReplacements - kKeys / 2));
  EXPECT_GT(freed_while_reading, 0u) << "reclamation never ran while readers were active";
  EXPECT_EQ(registry.retired_pending(), 0u) << "retired entries left after all readers quiesced";
  EXPECT_GE(registry.freed_total(), registry.retired_total());  // entries, plus grown-out tables
}

// Readers publish their epoch with a seq_cst store until kd_init turns on the asymmetric fence, so
// this runs first, in the default mode.
TEST(HotSwap, EightReadersSeeCompleteEntriesWhileTenThousandReplacementsRun) {
  if (EpochDomain::asymmetric()) GTEST_SKIP() << "an earlier test (or --gtest_repeat) enabled the fence";
  run_hot_swap();
}

// The same with relaxed reader stores and membarrier on the writer (epoch.hpp), the mode
// applications run in on Linux.
TEST(HotSwap, SameUnderTheMembarrierFence) {
  EpochDomain::enable_asymmetric_fence();
  if (!EpochDomain::asymmetric())
    GTEST_SKIP() << "membarrier(PRIVATE_EXPEDITED) unavailable here (or a ThreadSanitizer build)";
  run_hot_swap();
}

}  // namespace
}  // namespace kd
