// The job queue at scale (Google Benchmark, not a ctest test): builds a cache of 1,000,000 jobs
// (100,000 queued, 600,000 cancelled, 250,000 done, 50,000 failed) through the queue's own store
// code, then measures the real kdispatchd on it:
//   BM_TimeToFirstStatus   spawn kdispatchd, wait until it accepts and answers `status`
//   BM_Status/0, /20       `status` latency on a running daemon (20: with the top jobs, as
//                          `kdctl status` asks)
//   BM_FirstStartOfAnUnindexedCache   the first start on a cache an older daemon wrote (drops
//                          the index and counts first; run it last): time to the first status, and
//                          (indexed_after_s) until the background indexing has counted every job
//
//   bench_daemon_jobs [--jobs N] [google benchmark flags]
// KD_BENCH_CACHE=<dir> keeps the built cache there and reuses it on the next run.
#include <benchmark/benchmark.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "queue/job_store.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

using Clock = std::chrono::steady_clock;
using daemon::Job;
using daemon::JobState;

int g_jobs = 1000000;
std::filesystem::path g_dir;  // holds cache/ (DaemonProcess's layout)

std::string key_line(int i) {
  // Distinct valid full key lines: m and n walk a grid.
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=" + std::to_string(64 + (i / 1000) * 8) +
         " n=" + std::to_string(1 + i % 1000) + " k=4096 lda=4096 ldb=4096 ldc=" +
         std::to_string(64 + (i / 1000) * 8) +
         " batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

JobState state_of(int i) {
  const int r = i % 100;
  if (r < 10) return JobState::queued;
  if (r < 70) return JobState::cancelled;
  if (r < 95) return JobState::done;
  return JobState::failed;
}

// Writes the jobs through JobTxn (index and counts included), 50,000 per transaction.
void build_cache(const std::filesystem::path& cache, int jobs) {
  std::fprintf(stderr, "building a cache of %d jobs in %s ...\n", jobs, cache.c_str());
  const auto start = Clock::now();
  CacheWriter w(cache);
  constexpr int kPerTxn = 50000;
  const auto now = daemon::unix_ms_now();
  for (int first = 0; first < jobs; first += kPerTxn) {
    w.write_records([&](const lmdb::Txn& txn) {
      const auto dbs = daemon::open_job_dbs(txn);
      auto base = daemon::stored_counts(txn, dbs);
      daemon::JobTxn jt(txn, dbs, base ? *base : daemon::rebuild_index(txn, dbs));
      for (int i = first; i < std::min(jobs, first + kPerTxn); ++i) {
        Job j;
        j.key = key_line(i);
        j.state = state_of(i);
        j.count = 1 + static_cast<std::uint64_t>(i % 977);
        j.est_call_us = daemon::estimate_call_us(daemon::parse_job_key(j.key));
        j.created_unix_ms = j.updated_unix_ms = now - (jobs - i);
        j.reason = j.state == JobState::cancelled ? "cancelled by a client" : "";
        jt.put(j, std::nullopt);
      }
      jt.write_counts();
      return false;
    });
  }
  std::fprintf(stderr, "built in %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
}

const std::string kToml = "workers = \"none\"\nlog_level = \"warn\"\nmaintenance_interval_ms = 3600000\n";

void BM_TimeToFirstStatus(benchmark::State& state) {
  for (auto _ : state) {
    const auto start = Clock::now();
    test::DaemonProcess d(g_dir, {}, kToml);  // returns once the socket accepts
    const auto status = daemon::Client::status(d.socket());
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (status.jobs.cancelled == 0) state.SkipWithError("no jobs seen");
    state.SetIterationTime(s);
    d.stop(SIGTERM);
  }
  state.counters["jobs"] = g_jobs;
}
BENCHMARK(BM_TimeToFirstStatus)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_Status(benchmark::State& state) {
  static std::unique_ptr<test::DaemonProcess> d;
  if (!d) d = std::make_unique<test::DaemonProcess>(g_dir, std::vector<std::string>{}, kToml);
  daemon::Client c(d->socket());
  const auto top = state.range(0);
  for (auto _ : state) {
    const auto r = c.request({{"type", "status"}, {"jobs", top}});
    benchmark::DoNotOptimize(r);
  }
  state.counters["jobs"] = g_jobs;
  if (top == 20) d.reset();  // the last of the two
}
BENCHMARK(BM_Status)->Arg(0)->Arg(20)->Unit(benchmark::kMicrosecond);

void BM_FirstStartOfAnUnindexedCache(benchmark::State& state) {
  double indexing_s = 0;
  for (auto _ : state) {
    {
      CacheWriter w(g_dir / "cache");  // as an older daemon left it: no index, no counts
      w.write_records([&](const lmdb::Txn& txn) {
        const auto dbs = daemon::open_job_dbs(txn);
        mdb_drop(txn.get(), dbs.index, 0);
        lmdb::del(txn, dbs.meta, "job_counts");
        lmdb::del(txn, dbs.meta, "job_index_scan");
        return false;
      });
    }
    const auto start = Clock::now();
    test::DaemonProcess d(g_dir, {}, kToml);
    (void)daemon::Client::status(d.socket());
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    // The index is built in the background meanwhile: how long until status counts every job.
    while (daemon::Client::status(d.socket()).bounds.value().jobs_indexing)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    indexing_s = std::chrono::duration<double>(Clock::now() - start).count();
    d.stop(SIGTERM);
  }
  state.counters["indexed_after_s"] = indexing_s;
}
BENCHMARK(BM_FirstStartOfAnUnindexedCache)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace kd

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
      kd::g_jobs = std::atoi(argv[i + 1]);
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  }
  benchmark::Initialize(&argc, argv);
  std::optional<kd::test::TempDir> temp;
  if (const char* keep = std::getenv("KD_BENCH_CACHE"); keep != nullptr && *keep != '\0') {
    kd::g_dir = keep;
  } else {
    temp.emplace();
    kd::g_dir = temp->path();
  }
  if (!std::filesystem::exists(kd::g_dir / "cache" / "data.mdb")) kd::build_cache(kd::g_dir / "cache", kd::g_jobs);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
