// The cache check (store/cache_check.hpp) on real LMDB files: sound caches pass, whatever writes,
// overwrites and deletions made them (no false alarm may move a good cache aside), and each kind of
// damage is named.
#include "store/cache_check.hpp"

#include <gtest/gtest.h>

#include <lmdb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "store/cache_recovery.hpp"
#include "store/cache_store.hpp"
#include "support/cache_damage.hpp"
#include "support/temp_dir.hpp"
#include "support/text_file.hpp"
#include "test_records.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;

// Publishes, replaces and evicts records and writes and deletes jobs, `operations` of them in
// transactions of 20, so the file has branch pages, overflow runs, a free-page list and pages reused
// from it (one transaction per operation would cost CI a sync each).
void churn(const fs::path& dir, unsigned seed, int operations) {
  CacheWriter w(dir);
  std::mt19937 rng(seed);
  constexpr int kPerTransaction = 20;
  for (int done = 0; done < operations; done += kPerTransaction) {
    lmdb::Txn txn(w.env(), lmdb::Access::read_write);
    const MDB_dbi records = *lmdb::open_db(txn, "records", true);
    const MDB_dbi jobs = *lmdb::open_db(txn, "jobs", true);
    for (int op = 0; op < kPerTransaction; ++op) {
      const int i = static_cast<int>(rng() % 400);
      const std::string key = test::key_for(i);
      switch (rng() % 5) {
        case 0:
        case 1: lmdb::put(txn, records, key, serialize_record(test::make_record(i, key))); break;
        case 2: lmdb::del(txn, records, key); break;
        case 3: lmdb::put(txn, jobs, key, std::string(20 + rng() % 900, 'j')); break;
        case 4: lmdb::del(txn, jobs, key); break;
      }
    }
    txn.commit();
  }
}

void write_bytes(const fs::path& file, std::uint64_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(CacheCheck, ChurnedCachesPassEveryScope) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    test::TempDir dir;
    churn(dir.path(), seed, 1500);
    for (const auto scope : {CheckScope::applications, CheckScope::everything}) {
      const CacheCheck c = check_data_file(data_file_of(dir.path()), scope);
      EXPECT_TRUE(c.ok()) << "seed " << seed << ": " << c.message();
      EXPECT_GT(c.pages_checked, 10u);
    }
    EXPECT_TRUE(check_cache_dir(dir.path(), CheckScope::everything).ok());
  }
}

TEST(CacheCheck, ACompactCopyPassesAndReplacesThePreviousCopy) {
  test::TempDir dir;
  churn(dir.path(), 7, 800);
  CacheWriter w(dir.path());
  const CompactCopy first = write_compact_copy(w.env());
  EXPECT_GT(first.bytes, 0u);
  EXPECT_LE(first.bytes, fs::file_size(data_file_of(dir.path())));
  EXPECT_TRUE(check_data_file(backup_file_of(dir.path()), CheckScope::everything).ok());
  w.commit_record(test::make_record(1, test::key_for(1)));
  EXPECT_GT(last_commit(w.env()), first.txnid);
  write_compact_copy(w.env());
  EXPECT_FALSE(fs::exists(backup_file_of(dir.path()).string() + ".tmp"));
  EXPECT_TRUE(check_data_file(backup_file_of(dir.path()), CheckScope::everything).ok());
}

TEST(CacheCheck, NamesMissingEmptyForeignAndTruncatedFiles) {
  test::TempDir dir;
  EXPECT_EQ(inspect_cache_dir(dir.path() / "nothing").problem, CacheProblem::no_directory);
  EXPECT_EQ(inspect_cache_dir(dir.path()).problem, CacheProblem::no_data_file);

  test::write_text(data_file_of(dir.path()), "");
  const CacheCheck empty = inspect_cache_dir(dir.path());
  EXPECT_EQ(empty.problem, CacheProblem::empty);
  EXPECT_NE(empty.message().find("is empty (0 bytes)"), std::string::npos) << empty.message();

  test::write_text(data_file_of(dir.path()), std::string(20000, 'x'));
  EXPECT_EQ(inspect_cache_dir(dir.path()).problem, CacheProblem::not_lmdb);

  fs::remove(data_file_of(dir.path()));
  churn(dir.path(), 3, 300);
  const auto size = fs::file_size(data_file_of(dir.path()));
  fs::resize_file(data_file_of(dir.path()), size / 2);
  const CacheCheck cut = inspect_cache_dir(dir.path());
  EXPECT_EQ(cut.problem, CacheProblem::truncated);
  EXPECT_NE(cut.message().find("kdctl doctor"), std::string::npos) << cut.message();
  EXPECT_EQ(cut.message().find(".cpp"), std::string::npos) << cut.message();
}

// A snapshot may count pages past the end of the file that nothing reaches: LMDB never writes a
// page it allocated and freed in one transaction, so a kill -9 can leave such a sound file (seen as
// a kill test's flake). Only a reachable page past the end is truncation.
TEST(CacheCheck, PagesPastTheEndThatNothingReachesAreNotTruncation) {
  test::TempDir dir;
  churn(dir.path(), 4, 300);
  const fs::path file = data_file_of(dir.path());
  const std::uint32_t page_bytes = test::page_bytes_of(file);
  {
    // MDB_meta's last page number: after the 16-byte page header, magic, version, address,
    // map size and two 48-byte database records.
    constexpr std::uint64_t kLastPageAt = 16 + 24 + 2 * 48;
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    for (const std::uint64_t meta : {std::uint64_t{0}, std::uint64_t{page_bytes}}) {
      std::uint64_t last = 0;
      f.seekg(static_cast<std::streamoff>(meta + kLastPageAt));
      f.read(reinterpret_cast<char*>(&last), sizeof(last));
      last += 3;
      f.seekp(static_cast<std::streamoff>(meta + kLastPageAt));
      f.write(reinterpret_cast<const char*>(&last), sizeof(last));
    }
  }
  const CacheCheck c = check_data_file(file, CheckScope::applications);
  EXPECT_TRUE(c.ok()) << c.message();
}

TEST(CacheCheck, AZeroedTreePageIsDamageWithItsPageNumber) {
  test::TempDir dir;
  churn(dir.path(), 5, 600);
  const fs::path file = data_file_of(dir.path());
  const auto entries = test::map_entries(dir.path(), {"records"});
  ASSERT_FALSE(entries.empty());
  const std::uint32_t page_bytes = test::page_bytes_of(file);
  const std::uint64_t leaf = entries.front().pages.front();
  write_bytes(file, leaf * page_bytes, std::string(page_bytes, '\0'));
  const CacheCheck c = check_data_file(file, CheckScope::applications);
  EXPECT_EQ(c.problem, CacheProblem::damaged);
  EXPECT_NE(c.what.find(fmt::format("page {}", leaf)), std::string::npos) << c.what;
}

TEST(CacheCheck, AnUnreadableDirectorySaysPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every directory";
  test::TempDir dir;
  churn(dir.path() / "c", 2, 50);
  fs::permissions(dir.path() / "c", fs::perms::none);
  const CacheCheck c = inspect_cache_dir(dir.path() / "c");
  fs::permissions(dir.path() / "c", fs::perms::owner_all);
  EXPECT_EQ(c.problem, CacheProblem::unreadable_directory);
  EXPECT_NE(c.message().find("permission denied (run as the cache's owner"), std::string::npos) << c.message();
}

// Random damage of every kind: the check never crashes and never calls a damaged file sound when
// a page it must read changed (flips in values and free space may leave it sound).
TEST(CacheCheck, NeverCrashesOnRandomDamage) {
  test::TempDir dir;
  churn(dir.path() / "good", 11, 700);
  const fs::path good = data_file_of(dir.path() / "good");
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    const fs::path copy = dir.path() / "copy.mdb";
    fs::copy_file(good, copy, fs::copy_options::overwrite_existing);
    const test::Damage damage = test::damage_file(copy, seed);
    for (const auto scope : {CheckScope::applications, CheckScope::everything}) {
      const CacheCheck c = check_data_file(copy, scope);
      if (damage.kind == test::DamageKind::truncate && damage.cut_bytes < fs::file_size(good)) {
        EXPECT_FALSE(c.ok()) << damage.description;
      }
      if (!c.ok()) {
        EXPECT_FALSE(c.what.empty());
      }
    }
  }
}

// Reads every entry of `dbs` through LMDB itself (cursor both ways, mdb_get per key, every value's
// bytes touched); as a writer also deletes a third of the keys, adds entries and commits.
int lmdb_reads_everything(const fs::path& dir, const std::vector<const char*>& dbs, bool write) {
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_mapsize(env, std::size_t{1} << 34);
  if (mdb_env_open(env, dir.c_str(), write ? 0 : MDB_RDONLY, 0644) != 0) return 2;
  MDB_txn* txn = nullptr;
  if (mdb_txn_begin(env, nullptr, write ? 0 : MDB_RDONLY, &txn) != 0) return 3;
  unsigned sum = 0;
  for (const char* name : dbs) {
    MDB_dbi dbi = 0;
    if (mdb_dbi_open(txn, name, 0, &dbi) != 0) continue;
    MDB_cursor* cur = nullptr;
    mdb_cursor_open(txn, dbi, &cur);
    MDB_val k{}, v{};
    std::vector<std::string> keys;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      keys.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
      for (std::size_t i = 0; i < v.mv_size; i += 64) sum += static_cast<const unsigned char*>(v.mv_data)[i];
    }
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
    }
    mdb_cursor_close(cur);
    for (auto& key : keys) {
      MDB_val kk{key.size(), key.data()};
      mdb_get(txn, dbi, &kk, &v);
    }
    if (!write) continue;
    for (std::size_t i = 0; i < keys.size(); i += 3) {
      MDB_val kk{keys[i].size(), keys[i].data()};
      mdb_del(txn, dbi, &kk, nullptr);
    }
    for (int i = 0; i < 40; ++i) {
      std::string key = "added-" + std::to_string(i), value(100 + 97 * i, 'v');
      MDB_val kk{key.size(), key.data()}, vv{value.size(), value.data()};
      mdb_put(txn, dbi, &kk, &vv, 0);
    }
  }
  if (write) {
    mdb_txn_commit(txn);
  } else {
    mdb_txn_abort(txn);
  }
  mdb_env_close(env);
  return sum == 0xffffffffu ? 1 : 0;
}

// The safety argument of ARCHITECTURE.md, tested: a damaged file that passes the check is read by
// LMDB (applications: the trees the applications scope covers) and written by LMDB's writer
// (everything scope) without a fault or an assertion, in a child process.
TEST(CacheCheck, WhatPassesTheCheckLmdbReadsAndWritesWithoutFaulting) {
  test::TempDir dir;
  churn(dir.path() / "good", 13, 900);
  const std::string good = [&] {
    std::ifstream in(data_file_of(dir.path() / "good"), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  std::mt19937_64 rng(99);
  int passed = 0;
  for (int round = 0; round < 240; ++round) {
    std::string bytes = good;
    const std::uint64_t page_bytes = test::page_bytes_of(data_file_of(dir.path() / "good"));
    const std::uint64_t pages = bytes.size() / page_bytes;
    switch (round % 3) {
      case 0:  // bit flips anywhere
        for (int i = 0; i < 1 + static_cast<int>(rng() % 200); ++i) bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:  // page headers and node headers: the bytes LMDB navigates by
        for (int i = 0; i < 30; ++i) bytes[(rng() % pages) * page_bytes + rng() % 64] = static_cast<char>(rng());
        break;
      case 2:  // a zeroed range
      {
        const std::size_t at = rng() % bytes.size();
        std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), std::min<std::size_t>(rng() % 12000, bytes.size() - at), '\0');
      }
        break;
    }
    const fs::path copy = dir.path() / "copy";
    fs::remove_all(copy);
    fs::create_directories(copy);
    test::write_text(data_file_of(copy), bytes);
    const bool write = round % 2 == 1;
    if (!check_data_file(data_file_of(copy), write ? CheckScope::everything : CheckScope::applications).ok()) continue;
    ++passed;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::_exit(write ? lmdb_reads_everything(copy, {"records", "meta", "jobs"}, true)
                    : lmdb_reads_everything(copy, {"records", "meta"}, false));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_FALSE(WIFSIGNALED(status)) << "round " << round << (write ? " (writer)" : " (reader)")
                                      << ": LMDB died of signal " << WTERMSIG(status) << " on a file the check passed";
  }
  EXPECT_GT(passed, 40) << "too few damaged files passed the check to say anything";
}

}  // namespace
}  // namespace kd
