// A cache with 300 records (inline and on overflow pages), 300 jobs and a few search trees, written
// in 30 transactions, is damaged 100 ways (store/../support/cache_damage.hpp: truncations, zeroed
// ranges, bit flips). Each damaged copy goes through kdctl ls, show, stats, export,
// evict --damaged [--dry-run] and doctor, and through kdispatchd's start and stop:
//   - no process dies of a signal;
//   - doctor reports "N good, M damaged, T total" with N + M = T, leaves a cache that passes the
//     cache check, holds every record and job the damage left untouched (byte for byte) and no
//     record that differs from the original;
//   - kdispatchd starts, moves a damaged file aside (saying so in its log) and stops cleanly.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "queue/job.hpp"
#include "store/cache_check.hpp"
#include "store/cache_store.hpp"
#include "support/cache_damage.hpp"
#include "support/temp_dir.hpp"
#include "tree/search_tree.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;

constexpr int kShards = 10;
constexpr int kCopiesPerShard = 10;
constexpr int kRecords = 300;
constexpr int kTransactions = 30;

std::string key_for(int i) {
  return fmt::format(
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m={} n=16 k=4096 lda=4096 ldb=4096 ldc={} batch=1 "
      "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
      4096 + i, 4096 + i);
}

// Record i: a cubin of 40..6000 bytes, so some values sit in their leaf and others on overflow pages.
Record record_for(int i) {
  Record r;
  r.key_line = key_for(i);
  r.cubin = std::string("\x7f" "ELF", 4);
  for (int j = 0; j < 40 + (i * 97) % 6000; ++j) r.cubin.push_back(static_cast<char>((i * 31 + j) & 0xff));
  r.ptx = fmt::format(".version 9.0\n// record {}", i);
  r.source = "extern \"C\" __global__ void kd_main(kd_gemm_args a) {}\n";
  r.plan.launches.push_back({"kd_main", {static_cast<std::uint32_t>(i + 1), 1, 1}, {256, 1, 1}, 0});
  r.search_id = fmt::format("search-{}", i);
  r.proposer = "builtin";
  r.created_unix_s = 1700000000 + i;
  return r;
}

std::string job_for(int i) {
  daemon::Job j;
  j.key = key_for(i);
  j.state = i % 3 == 0 ? daemon::JobState::done : daemon::JobState::queued;
  j.count = static_cast<std::uint64_t>(i) * 7;
  j.est_call_us = 3.5;
  j.created_unix_ms = 1700000000000 + i;
  j.updated_unix_ms = 1700000000000 + i;
  j.reason = std::string(static_cast<std::size_t>(i % 50), 'r');
  return daemon::serialize_job(j);
}

// The intact cache, built once per test program.
struct Original {
  test::TempDir dir;
  fs::path cache;
  std::vector<test::EntryPages> entries;  // records and jobs
  std::map<std::string, std::string> records;

  Original() : cache(dir.path() / "cache") {
    {
      CacheWriter w(cache);
      for (int t = 0; t < kTransactions; ++t) {
        std::vector<std::pair<std::string, std::string>> records_batch, jobs_batch;
        for (int i = t; i < kRecords; i += kTransactions) {
          records_batch.emplace_back(key_for(i), serialize_record(record_for(i)));
          jobs_batch.emplace_back(key_for(i), job_for(i));
        }
        w.put_raw_many("records", records_batch);
        w.put_raw_many("jobs", jobs_batch);
        w.bump_generation();
      }
      for (int s = 0; s < 4; ++s) {
        search::SearchTree tree(fmt::format("search-{}", s), key_for(s));
        w.put_raw("trees", tree.search_id(), tree.to_json().dump());
      }
    }
    entries = test::map_entries(cache, {"records", "jobs"});
    for (const auto& e : entries) {
      if (e.db == "records") records.emplace(e.key, e.value);
    }
  }
};

const Original& original() {
  static const Original o;
  return o;
}

fs::path copy_of_original(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(data_file_of(original().cache), data_file_of(dir), fs::copy_options::overwrite_existing);
  return data_file_of(dir);
}

struct Counts {
  std::uint64_t good = 0, damaged = 0, total = 0;
};

std::optional<Counts> counts_in(const std::string& out, const std::string& what) {
  const std::regex line(what + R"(: (\d+) good, (\d+) damaged, (\d+) total)");
  std::smatch m;
  if (!std::regex_search(out, m, line)) return std::nullopt;
  return Counts{std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3])};
}

// kdctl's exit code is its own (0-4): 128 + n means it died of signal n.
void expect_no_signal(const test::KdctlRun& run, const std::string& what, const test::Damage& d) {
  EXPECT_LT(run.rc, 128) << what << " died of signal " << run.rc - 128 << " on " << d.description << "\n"
                         << run.err;
  EXPECT_EQ(run.err.find(".cpp:"), std::string::npos) << what << " printed a source path:\n" << run.err;
}

void check_doctor(const fs::path& dir, const test::KdctlRun& run, const test::Damage& d) {
  ASSERT_EQ(run.rc, 0) << "doctor failed on " << d.description << "\n" << run.out << run.err;
  for (const char* what : {"records", "jobs", "trees"}) {
    const auto c = counts_in(run.out, what);
    ASSERT_TRUE(c.has_value()) << "no " << what << " counts in:\n" << run.out;
    EXPECT_EQ(c->good + c->damaged, c->total) << run.out;
  }
  const CacheCheck after = check_cache_dir(dir, CheckScope::everything);
  ASSERT_TRUE(after.ok()) << after.message();
  const auto salvaged = test::map_entries(dir, {"records", "jobs"});
  std::map<std::pair<std::string, std::string>, std::string> found;
  for (const auto& e : salvaged) found.emplace(std::pair(e.db, e.key), e.value);
  for (const auto& e : salvaged) {
    if (e.db != "records") continue;
    const auto it = original().records.find(e.key);
    ASSERT_NE(it, original().records.end()) << "doctor made up record " << e.key;
    EXPECT_EQ(it->second, e.value) << "doctor kept a record that differs from the original: " << e.key;
  }
  for (const auto& e : original().entries) {
    if (!test::untouched(e, d)) continue;
    const auto it = found.find(std::pair(e.db, e.key));
    ASSERT_NE(it, found.end()) << "lost the " << e.db << " entry " << e.key << " on untouched pages (leaf page "
                               << e.pages.front() << ") after " << d.description << "\n" << run.out;
    EXPECT_EQ(it->second, e.value) << e.db << " entry " << e.key;
  }
}

class DamagedCache : public ::testing::TestWithParam<int> {};

TEST_P(DamagedCache, NothingDiesAndDoctorRecoversWhatTheDamageLeftAlone) {
  const test::HiddenGpus no_gpus;
  const auto& o = original();
  ASSERT_EQ(o.records.size(), static_cast<std::size_t>(kRecords));
  for (int copy = 0; copy < kCopiesPerShard; ++copy) {
    const auto seed = static_cast<std::uint32_t>(GetParam() * kCopiesPerShard + copy);
    SCOPED_TRACE(fmt::format("seed {}", seed));
    test::TempDir work;
    const fs::path a = work.path() / "a";
    const test::Damage d = test::damage_file(copy_of_original(a), seed);
    const std::string dir = a.string();
    const std::string socket = (work.path() / "none.sock").string();
    const auto kdctl = [&](std::vector<std::string> args) {
      args.insert(args.begin() + 1, {"--cache-dir", dir});
      auto run = test::run_kdctl(work.path(), args);
      expect_no_signal(run, args.front(), d);
      return run;
    };
    kdctl({"ls"});
    kdctl({"show", key_for(0)});
    kdctl({"stats", "--socket", socket});
    kdctl({"export", "-o", (work.path() / "out.kdar").string()});
    kdctl({"evict", "--damaged", "--dry-run"});
    check_doctor(a, kdctl({"doctor"}), d);
    EXPECT_EQ(kdctl({"ls"}).rc, 0) << "ls after doctor";

    // evict --damaged for real, on a second copy.
    const fs::path c = work.path() / "c";
    test::damage_file(copy_of_original(c), seed);
    expect_no_signal(test::run_kdctl(work.path(), {"evict", "--cache-dir", c.string(), "--damaged"}), "evict", d);

    // kdispatchd starts on a third copy and stops cleanly.
    const fs::path b = work.path() / "b";
    test::damage_file(copy_of_original(b / "cache"), seed);
    // A 0-byte file is no damage to kdispatchd: LMDB starts it as a new cache.
    const CacheCheck before = check_cache_dir(b / "cache", CheckScope::everything);
    const bool unsound = before.damaged() && before.problem != CacheProblem::empty;
    std::unique_ptr<test::DaemonProcess> daemon;
    try {
      daemon = std::make_unique<test::DaemonProcess>(b);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "kdispatchd did not start on " << d.description << ": " << e.what();
      continue;
    }
    const int status = daemon->stop(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status)) << "kdispatchd died of signal " << WTERMSIG(status) << "\n" << daemon->log();
    EXPECT_EQ(WEXITSTATUS(status), 0) << daemon->log();
    if (unsound) {
      EXPECT_NE(daemon->log().find("was moved to"), std::string::npos) << daemon->log();
      EXPECT_EQ(daemon->log().find(".cpp:"), std::string::npos) << daemon->log();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, DamagedCache, ::testing::Range(0, kShards));

}  // namespace
}  // namespace kd
