// A cache as kdispatchd writes it since the bounded job queue (jobs with their job_index entries and
// the counts per state in meta, records' last-use times in `usage`) passes the full cache check and
// survives kdctl doctor: a healthy one is left alone; --from merges it into an empty cache whole,
// with a job index that matches the jobs; and a damaged copy is rebuilt with such an index, so that
// kdispatchd starts on it without indexing its jobs again.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "queue/job.hpp"
#include "queue/job_store.hpp"
#include "store/cache_check.hpp"
#include "store/cache_recovery.hpp"
#include "store/cache_store.hpp"
#include "store/lmdb.hpp"
#include "store/record_usage.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using daemon::JobState;

constexpr int kRecords = 40;

std::string shape_key(int i) {
  return fmt::format(
      "gemm a=f16 b=f16 c=f16 compute=f32 ta=N tb=N m={} n=64 k=64 lda={} ldb=64 ldc={} batch=1 "
      "epilogue=none beta0=1",
      64 + i, 64 + i, 64 + i);
}

std::string full_key(int i) { return shape_key(i) + " arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132"; }

using test::eventually;

// The job table of a cache no process has open, as the daemon's job store reads it at its start.
struct JobTable {
  std::optional<daemon::QueueCounts> stored;  // nullopt: the daemon would index the jobs again
  bool scanning = false;                      // an index scan is under way
  std::uint64_t jobs = 0, index = 0;          // entries
  daemon::QueueCounts parsed;                 // the jobs per state, counted by parsing each
};

JobTable job_table(const fs::path& cache) {
  CacheWriter w(cache);
  JobTable t;
  {
    const lmdb::Txn txn(w.env(), lmdb::Access::read_write);  // aborted: open_job_dbs needs a writer
    const daemon::JobDbs dbs = daemon::open_job_dbs(txn);
    t.stored = daemon::stored_counts(txn, dbs);
    t.scanning = daemon::index_scan_position(txn, dbs).has_value();
  }
  for (const auto& [key, value] : w.scan_raw("jobs")) {
    ++t.jobs;
    if (const auto job = daemon::parse_job(key, value)) ++t.parsed.by_state[static_cast<std::size_t>(job->state)];
  }
  t.index = w.scan_raw("job_index").size();
  return t;
}

// The table's index and counts match its jobs, so the daemon's start reads them as they are.
void expect_consistent(const JobTable& t) {
  ASSERT_TRUE(t.stored.has_value()) << "the counts in meta disagree with the databases";
  EXPECT_FALSE(t.scanning);
  EXPECT_EQ(*t.stored, t.parsed);
  EXPECT_EQ(t.index, t.parsed.total());
  EXPECT_EQ(t.jobs, t.parsed.total());
}

std::map<std::string, std::string> entries(const fs::path& cache, const char* db) {
  const CacheWriter w(cache);
  std::map<std::string, std::string> out;
  for (auto& [key, value] : w.scan_raw(db)) out.emplace(std::move(key), std::move(value));
  return out;
}

class DaemonCacheDoctor : public ::testing::Test {
protected:
  // The cache a real kdispatchd leaves: 40 records, 20 jobs (queued, done and cancelled), the
  // last-use times of 20 records. Built once per test program.
  static void SetUpTestSuite() {
    const test::HiddenGpus no_gpus;
    original_ = new test::TempDir();
    const fs::path cache = original_->path() / "cache";
    {
      CacheWriter w(cache);
      for (int i = 0; i < kRecords; ++i) {
        Record r;
        r.key_line = full_key(i);
        r.cubin.assign(static_cast<std::size_t>(300 + 200 * i), 'c');
        r.created_unix_s = 1700000000 + i;
        w.commit_record(r);
      }
    }
    test::DaemonProcess daemon(original_->path(), {},
                               "workers = \"none\"\nmaintenance_interval_ms = 100\nbackup_interval_s = 0\n");
    daemon::Client c(daemon.socket());
    std::vector<std::string> shapes, cached, missed, used;
    for (int i = 0; i < 10; ++i) shapes.push_back(shape_key(100 + i));  // queued
    for (int i = 0; i < 5; ++i) cached.push_back(full_key(i));          // done: their record is cached
    for (int i = 0; i < 5; ++i) missed.push_back(full_key(200 + i));    // queued by misses
    for (int i = 0; i < 20; ++i) used.push_back(full_key(i));
    ASSERT_EQ(c.request({{"type", "prewarm"}, {"keys", shapes}}).at("queued"), 10);
    ASSERT_EQ(c.request({{"type", "prewarm"}, {"keys", cached}}).at("queued"), 5);
    json misses = json::array();
    for (const auto& k : missed) misses.push_back({{"key", k}, {"count", 3}});
    ASSERT_EQ(c.request({{"type", "miss"}, {"keys", misses}, {"ack", true}}).at("accepted"), 5);
    ASSERT_EQ(c.request({{"type", "cancel"}, {"key", shapes[0]}}).at("cancelled"), true);
    c.send({{"type", "usage"}, {"keys", used}});
    ASSERT_TRUE(eventually([&] { return entries(cache, kUsageDb).size() == used.size(); })) << daemon.log();
    const int status = daemon.stop(SIGTERM);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon.log();
  }
  static void TearDownTestSuite() {
    delete original_;
    original_ = nullptr;
  }

  static fs::path original_cache() { return original_->path() / "cache"; }
  // A copy of the original's data file in <tmp>/<name>.
  fs::path copy_of_original(const std::string& name) {
    const fs::path dir = tmp_.path() / name;
    fs::create_directories(dir);
    fs::copy_file(data_file_of(original_cache()), data_file_of(dir));
    return dir;
  }
  test::KdctlRun kdctl(const fs::path& cache, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--cache-dir", cache.string()});
    return test::run_kdctl(tmp_.path(), args);
  }

  static inline test::TempDir* original_ = nullptr;
  test::TempDir tmp_;
};

TEST_F(DaemonCacheDoctor, TheDaemonsCachePassesTheFullCheckAndDoctorLeavesItAlone) {
  const fs::path cache = copy_of_original("healthy");
  const JobTable t = job_table(cache);
  expect_consistent(t);
  EXPECT_EQ(t.parsed.of(JobState::queued), 14u);
  EXPECT_EQ(t.parsed.of(JobState::done), 5u);
  EXPECT_EQ(t.parsed.of(JobState::cancelled), 1u);
  EXPECT_EQ(entries(cache, kUsageDb).size(), 20u);

  const CacheCheck check = check_cache_dir(cache, CheckScope::everything);
  ASSERT_TRUE(check.ok()) << check.message();
  const auto run = kdctl(cache, {"doctor"});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("records: 40 good, 0 damaged, 40 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("jobs: 20 good, 0 damaged, 20 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("is healthy"), std::string::npos) << run.out;
}

TEST_F(DaemonCacheDoctor, FromMergesItIntoAnEmptyCacheWithAMatchingJobIndex) {
  const fs::path aside = copy_of_original("aside");
  const fs::path cache = tmp_.path() / "merged";
  const auto run = kdctl(cache, {"doctor", "--from", data_file_of(aside).string()});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("jobs: 20 good, 0 damaged, 20 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("added jobs are in the job index"), std::string::npos) << run.out;

  const CacheCheck check = check_cache_dir(cache, CheckScope::everything);
  ASSERT_TRUE(check.ok()) << check.message();
  const JobTable t = job_table(cache);
  expect_consistent(t);
  EXPECT_EQ(*t.stored, *job_table(aside).stored);
  EXPECT_EQ(entries(cache, "records"), entries(aside, "records"));
  EXPECT_EQ(entries(cache, "jobs"), entries(aside, "jobs"));
  EXPECT_EQ(entries(cache, kUsageDb), entries(aside, kUsageDb));
}

TEST_F(DaemonCacheDoctor, ADamagedCopyIsRebuiltWithAJobIndexTheDaemonStartsOn) {
  const test::HiddenGpus no_gpus;
  const fs::path dir = tmp_.path() / "rebuilt";
  const fs::path cache = copy_of_original("rebuilt/cache");
  fs::resize_file(data_file_of(cache), fs::file_size(data_file_of(cache)) - 1);  // its last page is cut
  ASSERT_TRUE(check_cache_dir(cache, CheckScope::everything).damaged());

  const auto run = kdctl(cache, {"doctor"});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  const CacheCheck check = check_cache_dir(cache, CheckScope::everything);
  ASSERT_TRUE(check.ok()) << check.message();
  const JobTable t = job_table(cache);
  expect_consistent(t);
  EXPECT_NE(run.out.find(fmt::format("jobs: {} good", t.parsed.total())), std::string::npos) << run.out;
  EXPECT_GT(t.parsed.total(), 0u) << run.out;
  const auto records = entries(cache, "records");
  const auto usage = entries(cache, kUsageDb);
  EXPECT_GT(usage.size(), 0u) << run.out;
  for (const auto& [key, value] : usage) {
    EXPECT_TRUE(records.count(key)) << "a last-use time without its record: " << key;
    EXPECT_EQ(value, entries(original_cache(), kUsageDb).at(key));
  }

  // The daemon reads the rebuilt index and counts as they are: no indexing, the same counts.
  test::DaemonProcess daemon(dir, {}, "workers = \"none\"\nbackup_interval_s = 0\n");
  const protocol::Status status = daemon::Client::status(daemon.socket());
  EXPECT_EQ(status.bounds.value().jobs_indexing, false);
  EXPECT_EQ(status.jobs.queued, t.parsed.of(JobState::queued));
  EXPECT_EQ(status.jobs.done, t.parsed.of(JobState::done));
  EXPECT_EQ(status.jobs.cancelled, t.parsed.of(JobState::cancelled));
  const int exit_status = daemon.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << daemon.log();
  EXPECT_EQ(daemon.log().find("indexing the jobs"), std::string::npos) << daemon.log();
}

}  // namespace
}  // namespace kd
