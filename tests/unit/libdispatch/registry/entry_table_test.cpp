// The registry table: insert, lookup, replace, growth, and the binary call key.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "registry/call_key.hpp"
#include "registry/epoch.hpp"
#include "registry/registry.hpp"
#include "support/call_key.hpp"

namespace kd {
namespace {

CallKey key_for(std::int64_t m) { return test::linear_call_key(m, 0x1000); }

std::unique_ptr<Entry> entry_for(const CallKey& key, std::uint64_t record_id) {
  auto e = std::make_unique<Entry>();
  e->key = key;
  e->state = EntryState::loaded;
  e->record_id = record_id;
  return e;
}

const Entry* guarded_lookup(const Registry& r, const CallKey& k) {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  EXPECT_NE(slot, nullptr);
  ReadGuard guard(*slot);
  return r.lookup(k, hash_call_key(k));
}

TEST(CallKey, EqualFieldsHashEqualAndDifferentFieldsDiffer) {
  const CallKey a = key_for(4096);
  CallKey b = key_for(4096);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(hash_call_key(a), hash_call_key(b));
  b.context = 0x2000;  // same shape in another context is another key
  EXPECT_FALSE(a == b);
  EXPECT_NE(hash_call_key(a), hash_call_key(b));
}

TEST(Registry, LookupOfUnknownKeyIsNull) {
  Registry r(16);
  EXPECT_EQ(guarded_lookup(r, key_for(1)), nullptr);
}

TEST(Registry, InsertThenLookupFindsTheEntry) {
  Registry r(16);
  r.publish(entry_for(key_for(7), 70));
  const Entry* e = guarded_lookup(r, key_for(7));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->record_id, 70u);
  EXPECT_EQ(guarded_lookup(r, key_for(8)), nullptr);
}

TEST(Registry, ReplaceSwapsTheEntryAndRetiresTheOldOne) {
  Registry r(16);
  EXPECT_EQ(r.publish(entry_for(key_for(7), 1)), nullptr);
  const Entry* old = r.publish(entry_for(key_for(7), 2));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->record_id, 1u);
  EXPECT_EQ(guarded_lookup(r, key_for(7))->record_id, 2u);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.retired_total(), 1u);
  EXPECT_EQ(r.reclaim(), 1u);  // no reader is inside a guard
  EXPECT_EQ(r.retired_pending(), 0u);
}

TEST(Registry, ReaderInsideAGuardKeepsTheOldEntryAlive) {
  Registry r(16);
  r.publish(entry_for(key_for(7), 1));
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  ASSERT_NE(slot, nullptr);
  {
    ReadGuard guard(*slot);
    const Entry* held = r.lookup(key_for(7), hash_call_key(key_for(7)));
    r.publish(entry_for(key_for(7), 2));
    EXPECT_EQ(r.reclaim(), 0u) << "freed an entry a reader still holds";
    EXPECT_EQ(held->record_id, 1u);
  }
  EXPECT_EQ(r.reclaim(), 1u);
}

TEST(Registry, GrowsPastItsInitialCapacityAndKeepsEveryKey) {
  Registry r(16);
  constexpr int kKeys = 1000;
  for (int i = 1; i <= kKeys; ++i) r.publish(entry_for(key_for(i), static_cast<std::uint64_t>(i)));
  EXPECT_EQ(r.size(), static_cast<std::size_t>(kKeys));
  EXPECT_GE(r.capacity(), 2u * kKeys);
  for (int i = 1; i <= kKeys; ++i) {
    const Entry* e = guarded_lookup(r, key_for(i));
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->record_id, static_cast<std::uint64_t>(i));
  }
  r.reclaim();
  EXPECT_EQ(r.retired_pending(), 0u);
}

TEST(EpochDomain, CountersAreSummedPerThreadAndSurviveThreadExit) {
  EpochDomain& d = EpochDomain::instance();
  const auto before = d.counter_totals();
  std::thread t([&] {
    ThreadSlot* s = d.this_thread();
    ASSERT_NE(s, nullptr);
    for (int i = 0; i < 5; ++i) s->bump(static_cast<std::size_t>(ThreadCounter::hits));
  });
  t.join();
  const auto after = d.counter_totals();
  EXPECT_EQ(after[static_cast<std::size_t>(ThreadCounter::hits)] -
                before[static_cast<std::size_t>(ThreadCounter::hits)],
            5u);
}

}  // namespace
}  // namespace kd
