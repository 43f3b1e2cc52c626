// The dispatcher with range records (issue 29), no GPU: calls whose n a range record covers load
// an entry of their own, whose grid the record's rule computes for that n; a call outside every
// range stays a miss; an exact record wins over a range; a range record with unsound range data
// is refused as corrupted; usage is collected under the range record's line. A vendor verdict
// answers every n of its range with vendor_chosen (not a miss), and a kernel record replaces it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>

#include "key/gemm_key.hpp"
#include "runtime/dispatcher.hpp"
#include "runtime/usage_reporter.hpp"
#include "store/cache_store.hpp"
#include "support/commit_in_child.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using namespace std::chrono_literals;
using test::commit_in_child;
using test::eventually;

const DevicePart kDevice{"sm_90", "NVIDIA H100 80GB HBM3", 132};

CallKey call(std::int64_t n) {
  CallKey k;
  k.context = 0xABC;
  k.a = k.b = k.c = DType::f32;
  k.ta = Transpose::T;
  k.m = k.k = k.lda = k.ldb = k.ldc = 768;
  k.n = n;
  k.beta_zero = true;
  return k;
}

std::string range_line(std::int64_t lo, std::int64_t hi) {
  GemmKey k;
  static_cast<GemmShape&>(k) = call(lo);
  return k.with_n_range(lo, hi).with_device(kDevice).full_line();
}

// Loads without CUDA what the CUDA loader loads: the record's plan for the call's n (plan_at_n).
class PlanLoader final : public EntryLoader {
public:
  std::variant<std::string, FallbackReason> key_line(const CallKey& key) override { return full_line(key, kDevice); }
  std::variant<LoadedEntry, FallbackReason> load(const CallKey& key, const Record& r) override {
    auto plan = plan_at_n(r.plan, key.n);
    if (!std::holds_alternative<LaunchPlan>(plan)) return FallbackReason::corrupted;
    LoadedEntry out;
    out.entry = std::make_unique<Entry>();
    out.entry->launch_count = 1;
    out.entry->launches[0].grid = std::get<LaunchPlan>(plan).launches.at(0).grid;
    return out;
  }
};

// y = ceil(n / 64) over [lo, hi]; x tells records apart.
Record range_record(std::int64_t lo, std::int64_t hi, std::uint32_t x) {
  Record r;
  r.key_line = range_line(lo, hi);
  r.cubin = "cubin " + std::to_string(x);
  r.plan.launches.push_back({"kd_main", {x, static_cast<std::uint32_t>((hi + 63) / 64), 1}, {128, 1, 1}, 0});
  r.plan.launches[0].grid_rule[1] = GridRule{.offset = 63, .div = 64};
  return r;
}

Record exact_record(std::int64_t n, std::uint32_t x) {
  Record r;
  r.key_line = full_line(call(n), kDevice);
  r.cubin = "cubin " + std::to_string(x);
  r.plan.launches.push_back({"kd_main", {x, 1, 1}, {128, 1, 1}, 0});
  return r;
}

// A bucket searched without a winner (daemon/src/sched/scheduler.cpp's vendor verdict).
Record vendor_record(std::int64_t lo, std::int64_t hi) {
  Record r;
  r.key_line = range_line(lo, hi);
  r.kind = RecordKind::vendor;
  r.candidate_us = 12.5;
  r.baseline_us = 11.0;
  r.idea = "no range winner: test";
  return r;
}

struct Seen {
  FallbackReason reason = FallbackReason::no_entry;
  std::array<std::uint32_t, 3> grid{};
};
Seen lookup(Dispatcher& d, std::int64_t n) {
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  ReadGuard guard(*slot);
  const auto r = d.lookup(call(n));
  return {r.reason, r.entry != nullptr ? r.entry->launches[0].grid : std::array<std::uint32_t, 3>{}};
}
bool loaded_with(Dispatcher& d, std::int64_t n, std::array<std::uint32_t, 3> grid) {
  const Seen s = lookup(d, n);
  return s.grid == grid;
}
bool missing_with(Dispatcher& d, std::int64_t n, FallbackReason reason) {
  const Seen s = lookup(d, n);
  return s.grid == std::array<std::uint32_t, 3>{} && s.reason == reason;
}

DispatcherOptions options(const test::TempDir& dir) {
  DispatcherOptions o;
  o.cache_dir = dir.path() / "cache";
  o.poll_interval = 20ms;
  return o;
}

TEST(RangeDispatch, EachCoveredNGetsItsOwnGridAndNothingOutsideTheRange) {
  test::TempDir dir;
  const auto opts = options(dir);
  ASSERT_EQ(commit_in_child(opts.cache_dir, {range_record(129, 256, 7), exact_record(200, 9)}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 130, {7, 3, 1}); }));
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 193, {7, 4, 1}); }));
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 256, {7, 4, 1}); }));
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 200, {9, 1, 1}); })) << "the exact record wins";
  EXPECT_TRUE(eventually([&] { return missing_with(d, 128, FallbackReason::no_entry); }));
  EXPECT_TRUE(eventually([&] { return missing_with(d, 257, FallbackReason::no_entry); }));

  // Usage goes under the range record's line, once for all the calls it served.
  UsageReporter::KeysByLine keys;
  UsageReporter::ServedBy served;
  for (const std::int64_t n : {130, 193}) {
    keys[full_line(call(n), kDevice)].push_back(call(n));
    served[full_line(call(n), kDevice)] = range_line(129, 256);
  }
  Registry r;
  for (const std::int64_t n : {130, 193}) {
    auto e = std::make_unique<Entry>();
    e->key = call(n);
    e->state = EntryState::loaded;
    e->used.store(1);
    r.publish(std::move(e));
  }
  EXPECT_EQ(UsageReporter::collect(r, keys, served), std::vector<std::string>{range_line(129, 256)});
}

TEST(RangeDispatch, AnUnsoundRangeRecordIsRefusedAsCorrupted) {
  test::TempDir dir;
  const auto opts = options(dir);
  Record bad = range_record(1, 64, 5);
  bad.plan.launches[0].grid_rule[1] = GridRule{.div = 64};  // 0 blocks for n < 64
  ASSERT_EQ(commit_in_child(opts.cache_dir, {bad}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  EXPECT_TRUE(eventually([&] { return missing_with(d, 10, FallbackReason::corrupted); }));
}

TEST(RangeDispatch, ARangePublishedLaterIsPickedUp) {
  test::TempDir dir;
  const auto opts = options(dir);
  ASSERT_EQ(commit_in_child(opts.cache_dir, {exact_record(1, 1)}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  ASSERT_TRUE(eventually([&] { return missing_with(d, 40, FallbackReason::no_entry); }));
  ASSERT_EQ(commit_in_child(opts.cache_dir, {range_record(33, 64, 3)}), 0);
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 40, {3, 1, 1}); }));
}

TEST(RangeDispatch, AVendorVerdictAnswersEveryNOfItsRangeAndAnExactKernelStillWins) {
  test::TempDir dir;
  const auto opts = options(dir);
  ASSERT_EQ(commit_in_child(opts.cache_dir, {vendor_record(33, 64), exact_record(40, 4)}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  for (const std::int64_t n : {33, 50, 64})
    EXPECT_TRUE(eventually([&] { return missing_with(d, n, FallbackReason::vendor_chosen); })) << n;
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 40, {4, 1, 1}); })) << "the exact record wins";
  EXPECT_TRUE(eventually([&] { return missing_with(d, 65, FallbackReason::no_entry); }));
  EXPECT_FALSE(kFallbackReasons[static_cast<std::size_t>(FallbackReason::vendor_chosen)].is_miss);
}

TEST(RangeDispatch, AVendorVerdictReplacesAMissAndAKernelReplacesTheVerdict) {
  test::TempDir dir;
  const auto opts = options(dir);
  ASSERT_EQ(commit_in_child(opts.cache_dir, {exact_record(1, 1)}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  ASSERT_TRUE(eventually([&] { return missing_with(d, 20, FallbackReason::no_entry); }));
  ASSERT_EQ(commit_in_child(opts.cache_dir, {vendor_record(17, 32)}), 0);
  ASSERT_TRUE(eventually([&] { return missing_with(d, 20, FallbackReason::vendor_chosen); }));
  // Searched again later (evicted, then prewarmed) with a winner: the verdict's entry is swapped.
  ASSERT_EQ(commit_in_child(opts.cache_dir, {exact_record(20, 6)}), 0);
  EXPECT_TRUE(eventually([&] { return loaded_with(d, 20, {6, 1, 1}); }));
}

TEST(RangeDispatch, AVendorVerdictWithSomethingToLaunchIsRefusedAsCorrupted) {
  test::TempDir dir;
  const auto opts = options(dir);
  Record bad = vendor_record(1, 16);
  bad.plan.launches.push_back({"kd_main", {1, 1, 1}, {128, 1, 1}, 0});
  ASSERT_EQ(commit_in_child(opts.cache_dir, {bad}), 0);
  Dispatcher d(opts, std::make_unique<PlanLoader>());
  EXPECT_TRUE(eventually([&] { return missing_with(d, 10, FallbackReason::corrupted); }));
}

}  // namespace
}  // namespace kd
