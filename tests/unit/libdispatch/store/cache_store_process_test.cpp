// Readers next to a writer. LMDB allows one environment per directory per process, so each reader
// runs in a forked child that reports the first check that failed as its exit code (0: all passed).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "common/error.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_records.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kSkipped = 77;  // the child could not set up its conditions (see the test)

// The code a child returns when `got` is not `want`: 0 when equal, 20 + the miss otherwise, 19 for
// a record other than the expected one.
int check_record(const std::variant<Record, LookupMiss>& got, const Record& want) {
  if (const auto* miss = std::get_if<LookupMiss>(&got)) return 20 + static_cast<int>(*miss);
  return std::get<Record>(got) == want ? 0 : 19;
}

int check_miss(const std::variant<Record, LookupMiss>& got, LookupMiss want) {
  if (std::holds_alternative<Record>(got)) return 19;
  const LookupMiss miss = std::get<LookupMiss>(got);
  return miss == want ? 0 : 20 + static_cast<int>(miss);
}

// Runs checks in order; the first non-zero result is the child's exit code.
int first_failure(std::initializer_list<std::function<int()>> checks) {
  for (const auto& check : checks) {
    if (const int rc = check(); rc != 0) return rc;
  }
  return 0;
}

TEST(CacheStoreProcesses, PublishThenLookupFromAChildReader) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  writer.commit_record(test::make_record(1, test::key_for(1)));
  writer.commit_record(test::make_record(2, test::key_for(2)));

  test::ChildProcess child([&] {
    CacheReader reader(tmp.path(), RuntimeVersions{13000, 130100});
    return first_failure({
        [&] { return reader.available() ? 0 : 1; },
        [&] { return reader.generation() == 2 ? 0 : 2; },
        [&] { return check_record(reader.lookup(test::key_for(1)), test::make_record(1, test::key_for(1))); },
        [&] { return check_record(reader.lookup(test::key_for(2)), test::make_record(2, test::key_for(2))); },
        [&] { return check_miss(reader.lookup(test::key_for(3)), LookupMiss::not_found); },
        [&] { return check_miss(reader.lookup(""), LookupMiss::not_found); },
        [&] { return check_miss(reader.lookup(std::string(4096, 'k')), LookupMiss::not_found); },
        [&] {
          return reader.list_keys() == std::vector<std::string>{test::key_for(1), test::key_for(2)} ? 0 : 3;
        },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST(CacheStoreProcesses, ReaderSeesNewPublicationsOnlyAfterRefresh) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  test::Pipe to_child;
  test::Pipe to_parent;
  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    to_parent.send('r');
    if (to_child.receive(30s) != 'p') return 1;
    return first_failure({
        [&] { return check_miss(reader.lookup(test::key_for(1)), LookupMiss::not_found); },
        [&] { return reader.refresh() == 1 ? 0 : 2; },
        [&] { return check_record(reader.lookup(test::key_for(1)), test::make_record(1, test::key_for(1))); },
    });
  });
  ASSERT_EQ(to_parent.receive(30s), 'r');
  writer.commit_record(test::make_record(1, test::key_for(1)));
  to_child.send('p');
  EXPECT_EQ(child.wait(), 0);
}

// Four readers look up in a loop while this process publishes 200 records. Publication i makes
// generation i + 1, so a snapshot of generation g holds exactly records 0..g-1: every reader
// checks its generations never go back and each snapshot is complete, current and untorn.
TEST(CacheStoreProcesses, ConcurrentReadersSeeMonotonicGenerationsAndWholeRecords) {
  constexpr int kRecords = 200;
  constexpr int kReaders = 4;
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  test::Pipe ready;
  std::vector<std::unique_ptr<test::ChildProcess>> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.push_back(std::make_unique<test::ChildProcess>([&, r] {
      CacheReader reader(tmp.path());
      if (!reader.available()) return 1;
      ready.send('r');
      const auto deadline = std::chrono::steady_clock::now() + 120s;
      std::uint64_t last = 0;
      for (int round = 0;; ++round) {
        const std::uint64_t g = reader.refresh();
        if (!reader.available() || reader.generation() != g) return 2;
        if (g < last) return 3;
        last = g;
        const int newest = static_cast<int>(g) - 1;
        for (const int i : {newest, (round * 7 + r) % std::max(1, static_cast<int>(g)), 0}) {
          if (i < 0 || i >= static_cast<int>(g)) continue;
          if (const int rc = check_record(reader.lookup(test::key_for(i)), test::make_record(i, test::key_for(i)))) {
            return rc;
          }
        }
        if (check_miss(reader.lookup(test::key_for(static_cast<int>(g))), LookupMiss::not_found) != 0) return 4;
        if (g >= kRecords) return 0;
        if (std::chrono::steady_clock::now() > deadline) return 5;
      }
    }));
  }
  for (int r = 0; r < kReaders; ++r) ASSERT_EQ(ready.receive(30s), 'r') << "reader " << r << " not ready";
  for (int i = 0; i < kRecords; ++i) {
    ASSERT_EQ(writer.commit_record(test::make_record(i, test::key_for(i))), static_cast<std::uint64_t>(i + 1));
    if (i % 10 == 0) std::this_thread::sleep_for(2ms);
  }
  for (int r = 0; r < kReaders; ++r) EXPECT_EQ(readers[r]->wait(), 0) << "reader " << r;
}

TEST(CacheStoreProcesses, DamagedRecordsAreCorruptedNeverACrash) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  writer.put_raw("records", test::key_for(1), "garbage, not a record");
  // A sound record stored under another key than its own.
  writer.put_raw("records", test::key_for(2), serialize_record(test::make_record(3, test::key_for(3))));
  std::string flipped = serialize_record(test::make_record(4, test::key_for(4)));
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 1);
  writer.put_raw("records", test::key_for(4), flipped);
  std::string other_schema = serialize_record(test::make_record(5, test::key_for(5)));
  other_schema[3] = static_cast<char>(kRecordSchemaVersion + 1);
  writer.put_raw("records", test::key_for(5), other_schema);
  writer.commit_record(test::make_record(6, test::key_for(6)));

  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    return first_failure({
        [&] { return check_miss(reader.lookup(test::key_for(1)), LookupMiss::corrupted); },
        [&] { return check_miss(reader.lookup(test::key_for(2)), LookupMiss::corrupted); },
        [&] { return check_miss(reader.lookup(test::key_for(4)), LookupMiss::corrupted); },
        [&] { return check_miss(reader.lookup(test::key_for(5)), LookupMiss::schema_mismatch); },
        [&] { return check_record(reader.lookup(test::key_for(6)), test::make_record(6, test::key_for(6))); },
        [&] { return reader.list_keys() == std::vector<std::string>{test::key_for(6)} ? 0 : 1; },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST(CacheStoreProcesses, RecordsOfAnotherDriverOrCublasMajorAreForeign) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  writer.commit_record(test::make_record(1, test::key_for(1)));  // driver 13000, cuBLAS 130100
  test::ChildProcess child([&] {
    const auto lookup_with = [&](RuntimeVersions v) { return CacheReader(tmp.path(), v).lookup(test::key_for(1)); };
    const Record want = test::make_record(1, test::key_for(1));
    return first_failure({
        [&] { return check_miss(lookup_with({12080, 0}), LookupMiss::foreign_versions); },
        [&] { return check_miss(lookup_with({0, 120405}), LookupMiss::foreign_versions); },
        [&] { return check_record(lookup_with({13020, 130999}), want); },  // same majors
        [&] { return check_record(lookup_with({0, 0}), want); },          // unchecked
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST(CacheStoreProcesses, CacheOfAnotherSchemaIsRefusedByWriterAndMismatchedForReaders) {
  test::TempDir tmp;
  {
    CacheWriter writer(tmp.path());
    writer.commit_record(test::make_record(1, test::key_for(1)));
    writer.put_raw("meta", "schema", std::to_string(kCacheSchemaVersion + 1));
  }
  EXPECT_THROW(CacheWriter{tmp.path()}, Error);
  test::ChildProcess child([&] {
    CacheReader reader(tmp.path());
    return first_failure({
        [&] { return reader.available() ? 1 : 0; },
        [&] { return reader.unavailable_reason().find("schema") != std::string::npos ? 0 : 2; },
        [&] { return check_miss(reader.lookup(test::key_for(1)), LookupMiss::schema_mismatch); },
        [&] { return reader.refresh() == 0 && !reader.available() ? 0 : 3; },
        [&] { return reader.list_keys().empty() ? 0 : 4; },
    });
  });
  EXPECT_EQ(child.wait(), 0);
}

// Makes a directory tree readable to everyone and `cache` itself read-only for the test's
// duration; restores write access so TempDir can remove it.
class ReadOnlyCache {
public:
  ReadOnlyCache(const fs::path& root, const fs::path& cache) : cache_(cache) {
    fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    for (const auto& entry : fs::directory_iterator(cache)) {
      fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    }
    fs::permissions(cache, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                               fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  }
  ~ReadOnlyCache() {
    std::error_code ec;
    fs::permissions(cache_, fs::perms::owner_all, fs::perm_options::add, ec);
  }
  ReadOnlyCache(const ReadOnlyCache&) = delete;
  ReadOnlyCache& operator=(const ReadOnlyCache&) = delete;

private:
  fs::path cache_;
};

// In the child: root ignores permissions, so a root test process drops to nobody first. Returns
// false when that is impossible (the child then reports kSkipped).
bool run_unprivileged() {
  if (geteuid() != 0) return true;
  constexpr uid_t kNobody = 65534;
  return setgid(kNobody) == 0 && setuid(kNobody) == 0 && geteuid() == kNobody;
}

enum class LockFile { kept, removed };

void expect_read_only_cache_readable(LockFile lock_file) {
  test::TempDir tmp;
  const fs::path cache = tmp.path() / "cache";
  { CacheWriter(cache).commit_record(test::make_record(1, test::key_for(1))); }
  if (lock_file == LockFile::removed) fs::remove(cache / "lock.mdb");
  ReadOnlyCache read_only(tmp.path(), cache);
  test::ChildProcess child([&] {
    if (!run_unprivileged()) return kSkipped;
    if (access(cache.c_str(), W_OK) == 0) return kSkipped;  // permissions not enforced
    CacheReader reader(cache);
    return first_failure({
        [&] { return reader.available() ? 0 : 1; },
        [&] { return check_record(reader.lookup(test::key_for(1)), test::make_record(1, test::key_for(1))); },
        [&] { return reader.refresh() == 1 ? 0 : 2; },
        [&] { return check_miss(reader.lookup(test::key_for(2)), LookupMiss::not_found); },
        [&] { return fs::exists(cache / "lock.mdb") == (lock_file == LockFile::kept) ? 0 : 3; },
    });
  });
  const int rc = child.wait();
  if (rc == kSkipped) GTEST_SKIP() << "cannot drop root privileges (setuid nobody), so permissions are not enforced";
  EXPECT_EQ(rc, 0);
}

TEST(CacheStoreProcesses, ReadOnlyDirectoryWithAnUnwritableLockFileIsReadWithoutLocking) {
  expect_read_only_cache_readable(LockFile::kept);
}

TEST(CacheStoreProcesses, ReadOnlyDirectoryWithoutLockFileIsReadWithoutLocking) {
  expect_read_only_cache_readable(LockFile::removed);
}

TEST(CacheStoreProcesses, UnreadableCacheIsUnavailableAndLookupsDoNotThrow) {
  test::TempDir tmp;
  const fs::path cache = tmp.path() / "cache";
  { CacheWriter(cache).commit_record(test::make_record(1, test::key_for(1))); }
  ReadOnlyCache read_only(tmp.path(), cache);
  fs::permissions(cache / "data.mdb", fs::perms::none);
  test::ChildProcess child([&] {
    if (!run_unprivileged()) return kSkipped;
    if (access((cache / "data.mdb").c_str(), R_OK) == 0) return kSkipped;
    CacheReader reader(cache);
    return first_failure({
        [&] { return reader.available() ? 1 : 0; },
        [&] { return reader.unavailable_reason().find("cache") != std::string::npos ? 0 : 2; },
        [&] { return check_miss(reader.lookup(test::key_for(1)), LookupMiss::cache_unavailable); },
        [&] { return reader.refresh() == 0 ? 0 : 3; },
        [&] { return reader.list_keys().empty() ? 0 : 4; },
    });
  });
  const int rc = child.wait();
  if (rc == kSkipped) GTEST_SKIP() << "cannot drop root privileges (setuid nobody), so permissions are not enforced";
  EXPECT_EQ(rc, 0);
}

// A reader killed with SIGKILL leaves its reader-table slot behind; opening a CacheWriter clears
// it. A second live reader keeps the environment open throughout: otherwise the next opener would
// be alone and LMDB would reset the whole table, hiding what the writer does.
TEST(CacheStoreProcesses, WriterClearsReaderSlotsOfKilledProcesses) {
  test::TempDir tmp;
  { CacheWriter(tmp.path()).commit_record(test::make_record(1, test::key_for(1))); }
  test::Pipe keeper_ready;
  test::Pipe keeper_stop;
  test::ChildProcess keeper([&] {
    CacheReader reader(tmp.path());
    keeper_ready.send(reader.available() ? 'r' : 'x');
    return keeper_stop.receive(60s) == 's' ? 0 : 1;
  });
  ASSERT_EQ(keeper_ready.receive(30s), 'r');
  test::Pipe victim_ready;
  test::ChildProcess victim([&] {
    CacheReader reader(tmp.path());  // holds a read transaction, hence a slot
    victim_ready.send(reader.available() ? 'r' : 'x');
    pause();
    return 0;
  });
  ASSERT_EQ(victim_ready.receive(30s), 'r');
  victim.kill_and_reap();

  {
    const lmdb::Env plain(tmp.path(), lmdb::Access::read_write);  // opening alone clears nothing
    const auto pids = plain.reader_pids();
    EXPECT_NE(std::find(pids.begin(), pids.end(), victim.pid()), pids.end()) << "no stale slot to clear";
    EXPECT_NE(std::find(pids.begin(), pids.end(), keeper.pid()), pids.end());
  }
  CacheWriter writer(tmp.path());
  const auto pids = writer.env().reader_pids();
  EXPECT_EQ(std::find(pids.begin(), pids.end(), victim.pid()), pids.end()) << "stale slot survived";
  EXPECT_NE(std::find(pids.begin(), pids.end(), keeper.pid()), pids.end());
  EXPECT_EQ(writer.env().clear_stale_readers(), 0);

  keeper_stop.send('s');
  EXPECT_EQ(keeper.wait(), 0);
}

}  // namespace
}  // namespace kd
