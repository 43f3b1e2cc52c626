// The miss ring: FIFO, bounded, drops counted, many producers lose nothing that was queued.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "registry/miss_queue.hpp"

namespace kd {
namespace {

MissReport report(std::int64_t m) {
  MissReport r;
  r.key.m = m;
  return r;
}

TEST(MissQueue, PopsInPushOrder) {
  MissQueue q(8);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q.push(report(i)), MissQueue::Push::queued);
  for (int i = 0; i < 5; ++i) {
    auto r = q.pop();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->key.m, i);
  }
  EXPECT_FALSE(q.pop().has_value());
}

TEST(MissQueue, FullQueueDropsAndCounts) {
  MissQueue q(4);
  ASSERT_EQ(q.capacity(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.push(report(i)), MissQueue::Push::queued);
  EXPECT_EQ(q.push(report(99)), MissQueue::Push::dropped);
  EXPECT_EQ(q.push(report(100)), MissQueue::Push::dropped);
  EXPECT_EQ(q.dropped(), 2u);
  EXPECT_EQ(q.pop()->key.m, 0);
  EXPECT_EQ(q.push(report(5)), MissQueue::Push::queued);  // room again after a pop
  int popped = 0;
  while (q.pop()) ++popped;
  EXPECT_EQ(popped, 4);
}

TEST(MissQueue, ConcurrentProducersLoseOnlyCountedDrops) {
  MissQueue q(256);
  constexpr int kThreads = 8, kEach = 20000;
  std::atomic<int> running{kThreads};
  std::atomic<std::uint64_t> queued{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        if (q.push(report(t * kEach + i)) == MissQueue::Push::queued) queued.fetch_add(1);
      running.fetch_sub(1);
    });
  std::set<std::int64_t> seen;
  std::uint64_t popped = 0;
  while (running.load() > 0 || popped < queued.load()) {
    if (auto r = q.pop()) {
      EXPECT_TRUE(seen.insert(r->key.m).second) << "report popped twice";
      ++popped;
    }
  }
  for (auto& p : producers) p.join();
  while (auto r = q.pop()) ++popped;
  EXPECT_EQ(popped, queued.load());
  EXPECT_EQ(popped + q.dropped(), static_cast<std::uint64_t>(kThreads) * kEach);
}

}  // namespace
}  // namespace kd
