// Range records (issue 29) in the cache: a call's exact line finds its own record first, else the
// narrowest range record that covers its n and equals it elsewhere; never a range outside its
// bounds; a range record whose range data is unsound is refused as corrupted at lookup.
#include <gtest/gtest.h>

#include <string>

#include "child_process.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_records.hpp"

namespace kd {
namespace {

constexpr std::string_view kDevice = " arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

std::string line_with_n(std::string_view n, int m = 768) {
  return "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=" + std::to_string(m) + " n=" + std::string(n) +
         " k=768 lda=768 ldb=768 ldc=" + std::to_string(m) + " batch=1 epilogue=none beta0=1" + std::string(kDevice);
}

// A range record for n in [lo, hi] whose grid's y is ceil(n / 64).
Record range_record(int id, std::int64_t lo, std::int64_t hi, int m = 768) {
  Record r = test::make_record(id, line_with_n(std::to_string(lo) + ".." + std::to_string(hi), m));
  LaunchSpec& main = r.plan.launches.at(0);
  main.grid = {12, static_cast<std::uint32_t>((hi + 63) / 64), 1};
  main.grid_rule[1] = GridRule{.scale = 1, .offset = 63, .div = 64};
  return r;
}

// What a child reports: 0 when `got` is the record with key line `want` (empty: a miss `miss`).
int expect(const std::variant<Record, LookupMiss>& got, const std::string& want,
           LookupMiss miss = LookupMiss::not_found) {
  if (const auto* m = std::get_if<LookupMiss>(&got)) return want.empty() && *m == miss ? 0 : 20 + static_cast<int>(*m);
  return std::get<Record>(got).key_line == want ? 0 : 19;
}

int first_failure(std::initializer_list<std::function<int()>> checks) {
  int i = 0;
  for (const auto& check : checks) {
    ++i;
    if (const int rc = check(); rc != 0) return i * 100 + rc % 100;
  }
  return 0;
}

TEST(RangeLookup, ExactFirstThenTheNarrowestCoveringRange) {
  test::TempDir tmp;
  {
    CacheWriter writer(tmp.path());
    writer.commit_record(range_record(1, 129, 256));
    writer.commit_record(range_record(2, 1, 1024));
    writer.commit_record(test::make_record(3, line_with_n("200")));
    writer.commit_record(range_record(4, 129, 256, 1024));  // another m: never serves m=768
    writer.commit_record(test::make_record(5, line_with_n("16")));
  }
  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    return first_failure({
        [&] { return expect(reader.lookup_covering(line_with_n("200")), line_with_n("200")); },
        [&] { return expect(reader.lookup_covering(line_with_n("129")), line_with_n("129..256")); },
        [&] { return expect(reader.lookup_covering(line_with_n("256")), line_with_n("129..256")); },
        [&] { return expect(reader.lookup_covering(line_with_n("257")), line_with_n("1..1024")); },
        [&] { return expect(reader.lookup_covering(line_with_n("1024")), line_with_n("1..1024")); },
        [&] { return expect(reader.lookup_covering(line_with_n("1025")), ""); },
        [&] { return expect(reader.lookup_covering(line_with_n("16")), line_with_n("16")); },
        [&] { return expect(reader.lookup_covering(line_with_n("300", 1024)), ""); },
        [&] { return expect(reader.lookup_covering(line_with_n("130", 1024)), line_with_n("129..256", 1024)); },
        // The exact lookup is unchanged: a call line never finds a range by itself.
        [&] { return expect(reader.lookup(line_with_n("130")), ""); },
        // A line that is itself a range finds only itself.
        [&] { return expect(reader.lookup_covering(line_with_n("129..256")), line_with_n("129..256")); },
        [&] { return expect(reader.lookup_covering(line_with_n("130..140")), ""); },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST(RangeLookup, UnsoundRangeDataIsCorruptedNotLaunched) {
  test::TempDir tmp;
  {
    CacheWriter writer(tmp.path());
    Record zero_at_lo = range_record(1, 1, 64);  // y = floor(n / 64): 0 at n = 1
    zero_at_lo.plan.launches[0].grid_rule[1] = GridRule{.div = 64};
    zero_at_lo.plan.launches[0].grid[1] = 1;
    writer.commit_record(zero_at_lo);
    Record stale_grid = range_record(2, 65, 128);  // rule gives 2 at n=128, grid says 3
    stale_grid.plan.launches[0].grid[1] = 3;
    writer.commit_record(stale_grid);
    Record no_rules_but_cublaslt = range_record(3, 129, 256);
    no_rules_but_cublaslt.kind = RecordKind::cublaslt_algo;
    writer.commit_record(no_rules_but_cublaslt);
    Record rules_on_exact = test::make_record(4, line_with_n("300"));
    rules_on_exact.plan.launches[0].grid_rule[0] = GridRule{.div = 1};
    writer.commit_record(rules_on_exact);
    Record too_large = range_record(5, 1000, 1u << 20);  // y reaches 16384 at the top: allowed
    too_large.key_line = line_with_n("1000..5000000");
    too_large.plan.launches[0].grid = {12, 78125, 1};  // 5e6/64 > 65535: beyond CUDA's y limit
    writer.commit_record(too_large);
  }
  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    return first_failure({
        [&] { return expect(reader.lookup_covering(line_with_n("10")), "", LookupMiss::corrupted); },
        [&] { return expect(reader.lookup_covering(line_with_n("100")), "", LookupMiss::corrupted); },
        [&] { return expect(reader.lookup_covering(line_with_n("200")), "", LookupMiss::corrupted); },
        [&] { return expect(reader.lookup_covering(line_with_n("300")), "", LookupMiss::corrupted); },
        [&] { return expect(reader.lookup_covering(line_with_n("4000")), "", LookupMiss::corrupted); },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST(RangeLookup, ManyExactRecordsOfOneShapeFamilyStillFindTheRange) {
  test::TempDir tmp;
  {
    CacheWriter writer(tmp.path());
    for (int n = 1; n <= 300; ++n) writer.commit_record(test::make_record(n, line_with_n(std::to_string(n * 7))));
    writer.commit_record(range_record(400, 2049, 4096));
  }
  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    return first_failure({
        [&] { return expect(reader.lookup_covering(line_with_n("3000")), line_with_n("2049..4096")); },
        [&] { return expect(reader.lookup_covering(line_with_n("2100")), line_with_n("2100")); },
        [&] { return expect(reader.lookup_covering(line_with_n("2101")), line_with_n("2049..4096")); },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

}  // namespace
}  // namespace kd
