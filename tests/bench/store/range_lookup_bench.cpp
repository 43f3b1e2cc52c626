// What finding a range record costs the application's background thread (issue 29): the exact
// lookup of a call's own record, and CacheReader::lookup_covering for a call served by a range,
// on caches where 10, 1,000 or 10,000 exact records share the call's (types, transposes, m)
// prefix that the covering lookup walks, next to the 8 buckets of range records. Neither runs on
// a calling thread: the hit path is the registry's, unchanged (bench_registry_host).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "store/cache_store.hpp"
#include "support/cache_per_size.hpp"

namespace {

namespace fs = std::filesystem;

std::string line_with_n(const std::string& n) {
  return fmt::format("gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n={} k=768 lda=768 ldb=768 ldc=768 "
                     "batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
                     n);
}

// Exact records at n = 100001 + i (above every range), and ranges 129..256 up to 16385..32768.
void write_cache(const fs::path& dir, int exact_records) {
  kd::CacheWriter w(dir);
  std::vector<std::pair<std::string, std::string>> batch;
  const auto add = [&](kd::Record r) {
    batch.emplace_back(r.key_line, kd::serialize_record(r));
    if (batch.size() == 500) {
      w.put_raw_many("records", batch);
      batch.clear();
    }
  };
  for (int i = 0; i < exact_records; ++i) {
    kd::Record r;
    r.key_line = line_with_n(std::to_string(100001 + i));
    r.cubin.assign(4000, 'c');
    r.plan.launches.push_back({"kd_main", {6, 1, 1}, {256, 1, 1}, 0});
    add(r);
  }
  for (std::int64_t hi = 256; hi <= 32768; hi *= 2) {
    kd::Record r;
    r.key_line = line_with_n(fmt::format("{}..{}", hi / 2 + 1, hi));
    r.cubin.assign(4000, 'r');
    r.plan.launches.push_back({"kd_main", {6, static_cast<std::uint32_t>(hi / 64), 1}, {256, 1, 1}, 0});
    r.plan.launches[0].grid_rule[1] = kd::GridRule{.offset = 63, .div = 64};
    add(r);
  }
  w.put_raw_many("records", batch);
  w.bump_generation();
}

const fs::path& cache_of(int exact_records) {
  static kd::test::CachePerSize caches(write_cache);
  return caches.of(exact_records);
}

void BM_ExactHit(benchmark::State& state) {
  const fs::path dir = cache_of(static_cast<int>(state.range(0)));
  kd::CacheReader reader(dir);
  const std::string line = line_with_n("100001");
  for (auto _ : state) benchmark::DoNotOptimize(reader.lookup_covering(line));
}

void BM_CoveredByRange(benchmark::State& state) {
  const fs::path dir = cache_of(static_cast<int>(state.range(0)));
  kd::CacheReader reader(dir);
  const std::string line = line_with_n("3000");
  if (!std::holds_alternative<kd::Record>(reader.lookup_covering(line))) state.SkipWithError("no range found");
  for (auto _ : state) benchmark::DoNotOptimize(reader.lookup_covering(line));
}

void BM_NoRecord(benchmark::State& state) {
  const fs::path dir = cache_of(static_cast<int>(state.range(0)));
  kd::CacheReader reader(dir);
  const std::string line = line_with_n("50000");
  for (auto _ : state) benchmark::DoNotOptimize(reader.lookup_covering(line));
}

}  // namespace

BENCHMARK(BM_ExactHit)->Arg(10)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CoveredByRange)->Arg(10)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NoRecord)->Arg(10)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
