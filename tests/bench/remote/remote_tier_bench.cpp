// What the fleet's remote tier costs (Google Benchmark, on a redis-server it starts on loopback):
// the lookup a miss adds (one GET of an absent key, on the tier's thread, never on the io thread or
// an application's), a pipelined batch of lookups, the checks of a fetched 64 KiB record, and the
// lease round trips a search adds. Hits never reach the daemon, so the tier adds nothing to them.
#include <benchmark/benchmark.h>

#include <memory>

#include "redis_server.hpp"
#include "remote/redis_link.hpp"
#include "remote/remote_leases.hpp"
#include "remote/remote_value.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

const std::string kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

struct Tier {
  test::TempDir dir;
  test::RedisServer redis{dir.path() / "redis"};
  RedisLink link{login()};
  RedisLogin login() const {
    RedisLogin l;
    l.endpoint = std::get<RemoteEndpoint>(parse_remote_url(redis.url()));
    return l;
  }
};

Tier& tier() {
  static Tier t;  // one redis-server for the whole run, killed at exit
  return t;
}

Record big_record() {
  Record r;
  r.key_line = kKey;
  r.cubin = std::string(64 * 1024, 'c');
  return r;
}

void BM_LookupOfAMiss(benchmark::State& state) {
  const std::string name = remote_record_key("bench", kKey + " absent");
  for (auto _ : state) benchmark::DoNotOptimize(tier().link.command({"GET", name}));
}
BENCHMARK(BM_LookupOfAMiss)->Unit(benchmark::kMicrosecond);

void BM_LookupBatch(benchmark::State& state) {
  std::vector<std::string> names;
  for (int i = 0; i < state.range(0); ++i) names.push_back(remote_record_key("bench", kKey + std::to_string(i)));
  std::vector<std::vector<std::string_view>> commands;
  for (const auto& n : names) commands.push_back({"GET", n});
  for (auto _ : state) benchmark::DoNotOptimize(tier().link.pipeline(commands));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LookupBatch)->Arg(128)->Unit(benchmark::kMicrosecond);

void BM_FetchAndCheck64KiB(benchmark::State& state) {
  const std::string name = remote_record_key("bench", kKey);
  tier().link.command({"SET", name, encode_remote_value(big_record())});
  const LocalEnvironment here{};
  for (auto _ : state) {
    const Reply r = tier().link.command({"GET", name});
    benchmark::DoNotOptimize(decode_remote_value(r.text, kKey, here));
  }
}
BENCHMARK(BM_FetchAndCheck64KiB)->Unit(benchmark::kMicrosecond);

void BM_LeaseAcquireAndRelease(benchmark::State& state) {
  const LeaseBook leases("bench-lease", "bench", std::chrono::seconds(30));
  for (auto _ : state) {
    benchmark::DoNotOptimize(leases.acquire(tier().link, kKey));
    leases.release(tier().link, kKey);
  }
}
BENCHMARK(BM_LeaseAcquireAndRelease)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kd::daemon

BENCHMARK_MAIN();
