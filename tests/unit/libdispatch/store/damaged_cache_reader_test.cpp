// The application side on damaged caches: CacheReader (what libkdispatch reads through) never
// faults on any of 100 damaged copies, never returns a record that differs from the one written,
// and answers `corrupted` for a file the cache check rejects; the dispatcher falls back with that
// counted reason and picks up a repaired file (a new inode) without a restart.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "runtime/dispatcher.hpp"
#include "store/cache_check.hpp"
#include "store/cache_recovery.hpp"
#include "store/cache_store.hpp"
#include "support/cache_damage.hpp"
#include "support/eventually.hpp"
#include "support/host_entry_loader.hpp"
#include "support/temp_dir.hpp"
#include "test_records.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kRecords = 120;

// Child exit codes.
constexpr int kChildOk = 0;
constexpr int kChildWrongRecord = 3;
constexpr int kChildWrongMiss = 4;
constexpr int kChildThrew = 5;

void write_cache(const fs::path& dir) {
  CacheWriter w(dir);
  for (int t = 0; t < 12; ++t) {
    std::vector<std::pair<std::string, std::string>> batch;
    for (int i = t; i < kRecords; i += 12) {
      batch.emplace_back(test::key_for(i), serialize_record(test::make_record(i, test::key_for(i))));
    }
    w.put_raw_many("records", batch);
    w.bump_generation();
  }
}

// Reads every key through CacheReader in a child process; returns the child's wait status.
int read_in_child(const fs::path& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      CacheReader reader(dir);
      reader.refresh();
      for (int i = 0; i < kRecords; ++i) {
        const auto found = reader.lookup(test::key_for(i));
        if (const auto* r = std::get_if<Record>(&found)) {
          if (*r != test::make_record(i, test::key_for(i))) ::_exit(kChildWrongRecord);
        } else if (!reader.available()) {
          const auto miss = std::get<LookupMiss>(found);
          if (miss != LookupMiss::corrupted && miss != LookupMiss::cache_unavailable) ::_exit(kChildWrongMiss);
        }
      }
      reader.list_keys();
      ::_exit(kChildOk);
    } catch (...) {
      ::_exit(kChildThrew);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(DamagedCacheReader, NeverFaultsNorReturnsAWrongRecord) {
  test::TempDir dir;
  write_cache(dir.path() / "good");
  std::map<CacheProblem, int> seen;
  for (std::uint32_t seed = 0; seed < 100; ++seed) {
    const fs::path copy = dir.path() / "copy";
    fs::remove_all(copy);
    fs::create_directories(copy);
    fs::copy_file(data_file_of(dir.path() / "good"), data_file_of(copy));
    const test::Damage damage = test::damage_file(data_file_of(copy), seed);
    ++seen[check_data_file(data_file_of(copy), CheckScope::applications).problem];
    const int status = read_in_child(copy);
    ASSERT_FALSE(WIFSIGNALED(status)) << "signal " << WTERMSIG(status) << " on " << damage.description;
    EXPECT_EQ(WEXITSTATUS(status), kChildOk) << damage.description;
  }
  // The copies exercise both outcomes: files the check rejects and files it passes.
  EXPECT_GT(seen[CacheProblem::none], 0);
  EXPECT_GT(seen[CacheProblem::damaged] + seen[CacheProblem::truncated], 0);
}

TEST(DamagedCacheReader, ADamagedFileAnswersCorruptedAndSaysWhy) {
  test::TempDir dir;
  write_cache(dir.path());
  fs::resize_file(data_file_of(dir.path()), fs::file_size(data_file_of(dir.path())) / 2);
  const pid_t pid = ::fork();
  if (pid == 0) {
    CacheReader reader(dir.path());
    const bool ok = !reader.available() && reader.unavailable_reason().find("truncated") != std::string::npos &&
                    std::get<LookupMiss>(reader.lookup(test::key_for(1))) == LookupMiss::corrupted;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The dispatcher's loader without CUDA: call key m is test::key_for(m); the entry carries the
// record's grid.
std::unique_ptr<EntryLoader> host_loader() {
  return std::make_unique<test::HostEntryLoader>([](const CallKey& key) { return test::key_for(static_cast<int>(key.m)); });
}

using test::eventually;
using test::lookup_as_caller;

TEST(DamagedCacheReader, TheDispatcherFallsBackAsCorruptedUntilTheFileIsReplaced) {
  test::TempDir dir;
  const fs::path cache = dir.path() / "cache";
  write_cache(dir.path() / "intact");
  fs::create_directories(cache);
  fs::copy_file(data_file_of(dir.path() / "intact"), data_file_of(cache));
  fs::resize_file(data_file_of(cache), fs::file_size(data_file_of(cache)) * 2 / 3);

  DispatcherOptions o;
  o.cache_dir = cache;
  o.socket_path = dir.path() / "nobody-listens.sock";
  o.poll_interval = 50ms;
  Dispatcher d(o, host_loader());
  CallKey k;
  k.context = 0xABC;
  k.m = 7;
  k.n = k.k = k.lda = k.ldb = k.ldc = 64;
  lookup_as_caller(d, k);
  EXPECT_TRUE(eventually([&] { return lookup_as_caller(d, k).reason == FallbackReason::corrupted; }))
      << "reason " << to_string(lookup_as_caller(d, k).reason);

  // What kdispatchd does at its next start: the damaged file goes aside, a sound one takes its place.
  move_aside(cache, std::chrono::system_clock::now());
  install_copy(data_file_of(dir.path() / "intact"), cache);
  ASSERT_TRUE(eventually([&] { return lookup_as_caller(d, k).entry != nullptr; })) << "the repaired cache was never read";
  ThreadSlot* slot = EpochDomain::instance().this_thread();
  ReadGuard guard(*slot);
  EXPECT_EQ(d.lookup(k).entry->launches[0].grid[0], 8u);  // make_record(7): grid x = i + 1
}

}  // namespace
}  // namespace kd
