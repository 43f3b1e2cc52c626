// Host cost of the registry's hot path, no GPU: a hit (guard + hash + probe), the same from the C
// API's kd_gemm_desc (checked and turned into the call key first, as kd_gemm_lookup does), and a
// miss on an unknown key (guard + hash + probe + report into the miss queue). The C API adds the
// driver call cuStreamGetCtx and the launch itself: bench_registry_launch measures those on a GPU.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "runtime/dispatcher.hpp"
#include "key/gemm_desc.hpp"
#include "registry/epoch.hpp"
#include "registry/miss_queue.hpp"
#include "registry/registry.hpp"
#include "store/cache_store.hpp"
#include "support/call_key.hpp"
#include "support/gemm_desc.hpp"
#include "support/host_entry_loader.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

CallKey key_for(std::int64_t m) {
  CallKey k = test::linear_call_key(m, 0x5000);
  k.a = k.b = k.c = DType::f32;  // the call desc_for describes
  k.compute = ComputeType::f32;
  k.precision = PrecisionClass::f32;
  return k;
}

Registry& filled_registry() {
  static Registry* r = [] {
    auto* reg = new Registry(4096);
    for (int i = 1; i <= 1000; ++i) {  // a realistic number of distinct shapes
      auto e = std::make_unique<Entry>();
      e->key = key_for(i);
      e->state = EntryState::loaded;
      reg->publish(std::move(e));
    }
    return reg;
  }();
  return *r;
}

void BM_RegistryHit(benchmark::State& state) {
  Registry& r = filled_registry();
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  std::int64_t m = 1;
  for (auto _ : state) {
    const CallKey k = key_for(m);
    ReadGuard guard(*slot);
    const Entry* e = r.lookup(k, hash_call_key(k));
    benchmark::DoNotOptimize(e);
    m = m == 1000 ? 1 : m + 1;
  }
}
BENCHMARK(BM_RegistryHit)->ThreadRange(1, 8);

kd_gemm_desc desc_for(std::int64_t m) {
  kd_gemm_desc d = test::gemm_desc(KD_OP_N, KD_OP_N, m, 16, 4096, KD_DTYPE_F32);
  d.lda = 4096;
  return d;
}

// What kd_gemm_lookup does on the host before and around the probe: the description checked and
// turned into the call key of the stream's context, then the probe.
void BM_DescHit(benchmark::State& state) {
  Registry& r = filled_registry();
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  const auto ctx = reinterpret_cast<CUcontext>(std::uintptr_t{0x5000});
  std::int64_t m = 1;
  for (auto _ : state) {
    const kd_gemm_desc d = desc_for(m);
    benchmark::DoNotOptimize(d);
    CallKey k;
    k.context = reinterpret_cast<std::uintptr_t>(ctx);
    if (read_gemm_desc(d, k) != KD_DESC_KEYABLE) {
      state.SkipWithError("description not keyed");
      break;
    }
    ReadGuard guard(*slot);
    const Entry* e = r.lookup(k, hash_call_key(k));
    benchmark::DoNotOptimize(e);
    m = m == 1000 ? 1 : m + 1;
  }
}
BENCHMARK(BM_DescHit)->ThreadRange(1, 8);

// A miss on a key never seen: lookup, then a report pushed into the queue (dropped once full, which
// is the steady state when nobody drains it: the cheap path; drained queues cost one CAS more).
void BM_RegistryMissAndReport(benchmark::State& state) {
  Registry& r = filled_registry();
  static MissQueue queue(1024);
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  std::int64_t m = 100000;
  for (auto _ : state) {
    const CallKey k = key_for(m++);
    ReadGuard guard(*slot);
    const Entry* e = r.lookup(k, hash_call_key(k));
    if (e == nullptr) benchmark::DoNotOptimize(queue.push(MissReport{k}));
    if (state.thread_index() == 0 && (m & 255) == 0) {  // a consumer, now and then
      while (queue.pop()) {
      }
    }
  }
}
BENCHMARK(BM_RegistryMissAndReport)->ThreadRange(1, 8);

// The same through the dispatcher with a live background thread draining the queue and resolving
// the keys (to cache_unavailable): misses on a known negative entry after the first pass.
class NoCudaLoader final : public EntryLoader {
public:
  std::variant<std::string, FallbackReason> key_line(const CallKey&) override {
    return FallbackReason::no_gpu;
  }
  std::variant<LoadedEntry, FallbackReason> load(const CallKey&, const Record&) override {
    return FallbackReason::no_gpu;
  }
};

void BM_DispatcherMiss(benchmark::State& state) {
  static Dispatcher& d = *[] {  // one for every run of this benchmark (immortal, like the C API's)
    DispatcherOptions o;
    o.cache_dir = "/nonexistent/kdispatch-bench";
    return new Dispatcher(o, std::make_unique<NoCudaLoader>());
  }();
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  std::int64_t m = 1;
  for (auto _ : state) {
    const CallKey k = key_for(m);
    ReadGuard guard(*slot);
    benchmark::DoNotOptimize(d.lookup(k));
    m = m == 4096 ? 1 : m + 1;
  }
}
BENCHMARK(BM_DispatcherMiss);

// Every key has a line, and every record "loads" on the host (test::HostEntryLoader): enough for
// the dispatcher to publish loaded entries, so the hit path is the real one.
std::string line_of(std::int64_t m) { return "bench-key m=" + std::to_string(m); }

// Dispatcher::lookup on loaded entries: what an application's hit costs on the host before the
// launch (guard + hash + probe + the state check and its usage mark).
void BM_DispatcherHit(benchmark::State& state) {
  static Dispatcher& d = *[] {
    static test::TempDir dir;
    {
      CacheWriter w(dir.path());
      for (int m = 1; m <= 1000; ++m) {
        Record r;
        r.key_line = line_of(m);
        w.commit_record(r);
      }
    }  // one LMDB environment per directory per process: closed before the dispatcher reads
    DispatcherOptions o;
    o.cache_dir = dir.path();
    auto* disp = new Dispatcher(o, std::make_unique<test::HostEntryLoader>([](const CallKey& key) { return line_of(key.m); }));
    ThreadSlot* slot = EpochDomain::instance().this_thread();
    for (int pass = 0; pass < 2000; ++pass) {  // first lookups queue misses; wait for the loads
      int loaded = 0;
      for (std::int64_t m = 1; m <= 1000; ++m) {
        ReadGuard guard(*slot);
        if (disp->lookup(key_for(m)).entry != nullptr) ++loaded;
      }
      if (loaded == 1000) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return disp;
  }();
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  std::int64_t m = 1;
  std::int64_t hits = 0;
  for (auto _ : state) {
    const CallKey k = key_for(m);
    ReadGuard guard(*slot);
    const Dispatcher::Lookup l = d.lookup(k);
    benchmark::DoNotOptimize(l);
    hits += l.entry != nullptr;
    m = m == 1000 ? 1 : m + 1;
  }
  if (hits != state.iterations()) state.SkipWithError("entries did not load: lookups missed");
}
BENCHMARK(BM_DispatcherHit)->ThreadRange(1, 8);

}  // namespace
}  // namespace kd

BENCHMARK_MAIN();
