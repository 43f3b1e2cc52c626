// kdctl doctor: a healthy cache is left alone; a damaged one is rebuilt from what can be read and
// the damaged file moved aside; --dry-run changes nothing; --from adds what a moved-aside file holds;
// a cache that kdispatchd holds is not swapped under it. The read commands name the damage and the fix.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <regex>

#include "kdctl_runner.hpp"
#include "store/cache_check.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "test_cache.hpp"

namespace kd::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;

class KdctlDoctor : public ::testing::Test {
protected:
  fs::path cache() const { return tmp_.path() / "cache"; }
  KdctlRun kdctl(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--cache-dir", cache().string()});
    return run_kdctl(tmp_.path(), args);
  }
  std::vector<std::string> keys() const { return record_keys(cache()); }
  // Many records, so the records tree has branch pages: record i's key is bf16_shape(1000 + i).
  void make_big_cache(int records) {
    CacheWriter w(cache());
    for (int i = 0; i < records; ++i) w.commit_record(test_record(full(bf16_shape(1000 + i), kH100), hours(1), 3000));
  }
  std::vector<fs::path> moved_aside() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(cache())) {
      if (e.path().filename().string().rfind("data.mdb.damaged-", 0) == 0) out.push_back(e.path());
    }
    return out;
  }
  TempDir tmp_;
};

TEST_F(KdctlDoctor, AHealthyCacheIsLeftAlone) {
  make_test_cache(cache());
  const auto before = fs::last_write_time(data_file_of(cache()));
  const auto run = kdctl({"doctor"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("records: 4 good, 0 damaged, 4 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("is healthy"), std::string::npos) << run.out;
  EXPECT_EQ(fs::last_write_time(data_file_of(cache())), before);
  EXPECT_TRUE(moved_aside().empty());
}

TEST_F(KdctlDoctor, ASoundFileLosesOnlyItsDamagedRecordsInPlace) {
  make_test_cache(cache());
  {
    CacheWriter w(cache());
    w.put_raw("records", full(bf16_shape(8192), kH100), "KDR\x01 not a record");
  }
  const auto run = kdctl({"doctor"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("records: 3 good, 1 damaged, 4 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("removed 1 damaged record(s)"), std::string::npos) << run.out;
  EXPECT_EQ(keys().size(), 3u);
  EXPECT_TRUE(moved_aside().empty());
}

TEST_F(KdctlDoctor, ATruncatedCacheIsRebuiltFromWhatCanBeRead) {
  make_big_cache(60);
  const auto size = fs::file_size(data_file_of(cache()));
  fs::resize_file(data_file_of(cache()), size * 3 / 4);

  const auto ls = kdctl({"ls"});
  EXPECT_EQ(ls.rc, 1);
  EXPECT_NE(ls.err.find("is truncated"), std::string::npos) << ls.err;
  EXPECT_NE(ls.err.find("run kdctl doctor"), std::string::npos) << ls.err;
  EXPECT_EQ(ls.err.find(".cpp"), std::string::npos) << ls.err;
  const auto evict = kdctl({"evict", "--damaged"});
  EXPECT_EQ(evict.rc, 1);
  EXPECT_NE(evict.err.find("run kdctl doctor"), std::string::npos) << evict.err;

  const auto dry = kdctl({"doctor", "--dry-run"});
  ASSERT_EQ(dry.rc, 0) << dry.err;
  EXPECT_EQ(fs::file_size(data_file_of(cache())), size * 3 / 4) << "a dry run changed the file";

  const auto run = kdctl({"doctor"});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  std::smatch m;
  const std::string out = run.out;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(records: (\d+) good, (\d+) damaged, (\d+) total)"))) << out;
  const auto good = std::stoul(m[1]);
  EXPECT_EQ(good + std::stoul(m[2]), std::stoul(m[3]));
  EXPECT_GT(good, 10u) << out;  // the first three quarters of the file hold most records
  ASSERT_EQ(moved_aside().size(), 1u);
  EXPECT_NE(out.find(moved_aside().front().string()), std::string::npos) << out;
  EXPECT_TRUE(check_cache_dir(cache(), CheckScope::everything).ok());
  EXPECT_EQ(keys().size(), good);
  EXPECT_EQ(kdctl({"ls"}).rc, 0);
}

TEST_F(KdctlDoctor, FromAddsWhatAMovedAsideFileHolds) {
  make_big_cache(30);
  const fs::path aside = tmp_.path() / "old.mdb";
  fs::copy_file(data_file_of(cache()), aside);
  fs::remove_all(cache());
  {
    CacheWriter w(cache());
    w.commit_record(test_record(full(bf16_shape(1000), kH100), hours(1), 3000));
  }
  const auto run = kdctl({"doctor", "--from", aside.string()});
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("records: 30 good, 0 damaged, 30 total"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1 already there"), std::string::npos) << run.out;
  EXPECT_EQ(keys().size(), 30u);
}

TEST_F(KdctlDoctor, DoesNotSwapTheFileUnderARunningDaemon) {
  make_big_cache(20);
  fs::resize_file(data_file_of(cache()), fs::file_size(data_file_of(cache())) / 2);
  const int fd = ::open((cache() / "kdispatchd.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto run = kdctl({"doctor"});
  ::close(fd);
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("kdispatchd is running"), std::string::npos) << run.err;
  EXPECT_TRUE(moved_aside().empty());
}

TEST_F(KdctlDoctor, AnEmptyOrForeignFileSaysSoAndDoctorReplacesIt) {
  fs::create_directories(cache());
  write_text(data_file_of(cache()), "");
  const auto ls = kdctl({"ls"});
  EXPECT_EQ(ls.rc, 1);
  EXPECT_NE(ls.err.find("is empty (0 bytes): not a kdispatch cache"), std::string::npos) << ls.err;
  EXPECT_EQ(ls.err.find("Bad file descriptor"), std::string::npos) << ls.err;

  write_text(data_file_of(cache()), std::string(10000, 'x'));
  const auto stats = kdctl({"stats", "--socket", (tmp_.path() / "none.sock").string()});
  EXPECT_EQ(stats.rc, 1);
  EXPECT_NE(stats.err.find("is not an LMDB file"), std::string::npos) << stats.err;
  const auto run = kdctl({"doctor"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("records: 0 good, 0 damaged, 0 total"), std::string::npos) << run.out;
  EXPECT_EQ(kdctl({"ls"}).rc, 0);
}

}  // namespace
}  // namespace kd::test
