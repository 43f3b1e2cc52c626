// The cache check and the salvage scan on caches of 1,000 and 10,000 records (cubins of 2-30 KB,
// so most sit on overflow pages) and as many 300-byte jobs. Prints the time per check and the
// pages read (counter "pages").
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "store/cache_check.hpp"
#include "store/cache_store.hpp"
#include "store/salvage_scan.hpp"
#include "support/cache_per_size.hpp"

namespace {

namespace fs = std::filesystem;

std::string key_for(int i) {
  return fmt::format("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m={} n=16 k=4096 lda=4096 ldb=4096 ldc={} "
                     "batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
                     1000 + i, 1000 + i);
}

void write_cache(const fs::path& dir, int records) {
  kd::CacheWriter w(dir);
  std::vector<std::pair<std::string, std::string>> batch, jobs;
  for (int i = 0; i < records; ++i) {
    kd::Record r;
    r.key_line = key_for(i);
    r.cubin.assign(static_cast<std::size_t>(2000 + (i * 7919) % 28000), static_cast<char>(i));
    batch.emplace_back(r.key_line, kd::serialize_record(r));
    jobs.emplace_back(r.key_line, std::string(300, 'j'));
    if (batch.size() == 500) {
      w.put_raw_many("records", batch);
      w.put_raw_many("jobs", jobs);
      batch.clear();
      jobs.clear();
    }
  }
  w.put_raw_many("records", batch);
  w.put_raw_many("jobs", jobs);
}

const fs::path& cache_of(int records) {
  static kd::test::CachePerSize caches(write_cache);
  return caches.of(records);
}

void BM_Check(benchmark::State& state, kd::CheckScope scope) {
  const fs::path file = kd::data_file_of(cache_of(static_cast<int>(state.range(0))));
  std::uint64_t pages = 0;
  for (auto _ : state) {
    const kd::CacheCheck c = kd::check_data_file(file, scope);
    if (!c.ok()) state.SkipWithError(c.message().c_str());
    pages = c.pages_checked;
  }
  state.counters["pages"] = static_cast<double>(pages);
  state.counters["file_MiB"] = static_cast<double>(fs::file_size(file)) / (1 << 20);
}

void BM_SalvageScan(benchmark::State& state) {
  const fs::path file = kd::data_file_of(cache_of(static_cast<int>(state.range(0))));
  std::uint64_t entries = 0;
  for (auto _ : state) {
    entries = 0;
    kd::scan_for_salvage(file, [&](const kd::SalvagedEntry&) { ++entries; });
  }
  state.counters["entries"] = static_cast<double>(entries);
}

BENCHMARK_CAPTURE(BM_Check, applications, kd::CheckScope::applications)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Check, everything, kd::CheckScope::everything)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SalvageScan)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
