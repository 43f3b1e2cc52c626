// Usage marks: a hit marks a loaded entry, the reporter collects and clears the marks (one line per
// key whatever the contexts), and its messages stay within the protocol's limits.
#include <gtest/gtest.h>

#include "runtime/usage_reporter.hpp"
#include "registry/epoch.hpp"

namespace kd {
namespace {

CallKey key_for(std::int64_t m, std::uint64_t context = 0xC0) {
  CallKey k;
  k.context = context;
  k.m = m;
  k.n = k.k = 64;
  return k;
}

void publish(Registry& r, const CallKey& k, EntryState state, FallbackReason reason = FallbackReason::no_entry) {
  auto e = std::make_unique<Entry>();
  e->key = k;
  e->state = state;
  e->miss_reason = reason;
  r.publish(std::move(e));
}

// What a calling thread's hit does to the entry.
void hit(const Registry& r, const CallKey& k) {
  ReadGuard guard(*EpochDomain::instance().this_thread());
  const Entry* e = r.lookup(k, hash_call_key(k));
  ASSERT_NE(e, nullptr);
  if (e->used.load(std::memory_order_relaxed) == 0) e->used.store(1, std::memory_order_relaxed);
}

TEST(UsageReporter, CollectsMarkedLoadedEntriesOncePerLineAndClearsTheMarks) {
  Registry r;
  UsageReporter::KeysByLine keys;
  for (std::int64_t m = 1; m <= 3; ++m) {
    publish(r, key_for(m), EntryState::loaded);
    keys["line " + std::to_string(m)].push_back(key_for(m));
  }
  publish(r, key_for(1, 0xC1), EntryState::loaded);  // the same line in a second context
  keys["line 1"].push_back(key_for(1, 0xC1));
  publish(r, key_for(4), EntryState::negative);
  keys["line 4"].push_back(key_for(4));
  publish(r, key_for(5), EntryState::negative, FallbackReason::vendor_chosen);
  keys["line 5"].push_back(key_for(5));

  EXPECT_TRUE(UsageReporter::collect(r, keys).empty());
  hit(r, key_for(1));
  hit(r, key_for(1, 0xC1));
  hit(r, key_for(3));
  hit(r, key_for(4));  // a negative entry is not a use of a record
  hit(r, key_for(5));  // but a vendor verdict's is: its record answered the call
  auto lines = UsageReporter::collect(r, keys);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"line 1", "line 3", "line 5"}));
  EXPECT_EQ(r.find(key_for(1))->used.load(), 0);
  EXPECT_TRUE(UsageReporter::collect(r, keys).empty()) << "collected marks are cleared";
}

TEST(UsageReporter, MessagesStayWithinTheKeyAndByteLimits) {
  std::vector<std::string> many(protocol::kMaxUsageKeys * 2 + 1, "gemm a=f32 m=1");
  const auto split = UsageReporter::messages(many);
  ASSERT_EQ(split.size(), 3u);
  EXPECT_EQ(split[0].keys.size(), protocol::kMaxUsageKeys);
  EXPECT_EQ(split[2].keys.size(), 1u);

  std::vector<std::string> long_lines(100, std::string(20000, 'k'));
  for (const auto& m : UsageReporter::messages(long_lines)) {
    std::size_t bytes = 0;
    for (const auto& k : m.keys) bytes += k.size();
    EXPECT_LE(bytes, UsageReporter::kMaxMessageBytes);
  }
  EXPECT_TRUE(UsageReporter::messages({}).empty());
}

}  // namespace
}  // namespace kd
