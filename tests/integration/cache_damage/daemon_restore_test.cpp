// kdispatchd's compact copy: written on its interval and at shutdown, restored (and said so in the
// log) when the daemon finds data.mdb damaged at its next start; the damaged file is kept aside.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "daemon_process.hpp"
#include "store/cache_check.hpp"
#include "store/cache_recovery.hpp"
#include "store/cache_store.hpp"
#include "support/eventually.hpp"
#include "support/temp_dir.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string key_for(int i) {
  return fmt::format(
      "gemm a=f16 b=f16 c=f16 compute=f32 ta=N tb=N m={} n=64 k=64 lda={} ldb=64 ldc={} batch=1 "
      "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
      64 + i, 64 + i, 64 + i);
}

std::size_t records_in(const fs::path& cache) {
  const CacheWriter w(cache);
  return w.scan_raw("records").size();
}

using test::eventually;

TEST(DaemonRestore, ADamagedCacheIsMovedAsideAndTheCompactCopyRestored) {
  const test::HiddenGpus no_gpus;
  test::TempDir dir;
  const fs::path cache = dir.path() / "cache";
  {
    CacheWriter w(cache);
    for (int i = 0; i < 30; ++i) {
      Record r;
      r.key_line = key_for(i);
      r.cubin.assign(static_cast<std::size_t>(500 + 300 * i), 'c');
      w.commit_record(r);
    }
  }
  {
    test::DaemonProcess daemon(dir.path(), {}, "backup_interval_s = 1\n");
    ASSERT_TRUE(eventually([&] { return fs::exists(backup_file_of(cache)); })) << daemon.log();
    const int status = daemon.stop(SIGTERM);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon.log();
    EXPECT_NE(daemon.log().find("compact copy of the cache"), std::string::npos) << daemon.log();
  }
  EXPECT_TRUE(check_data_file(backup_file_of(cache), CheckScope::everything).ok());

  fs::resize_file(data_file_of(cache), fs::file_size(data_file_of(cache)) / 2);
  test::DaemonProcess daemon(dir.path(), {}, "backup_interval_s = 0\n");
  const int status = daemon.stop(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon.log();
  const std::string log = daemon.log();
  EXPECT_NE(log.find("is truncated"), std::string::npos) << log;
  EXPECT_NE(log.find("restored from its compact copy"), std::string::npos) << log;
  EXPECT_NE(log.find("kdctl doctor --cache-dir"), std::string::npos) << log;
  EXPECT_EQ(log.find(".cpp:"), std::string::npos) << log;
  EXPECT_EQ(records_in(cache), 30u);
  std::size_t aside = 0;
  for (const auto& e : fs::directory_iterator(cache)) aside += e.path().filename().string().rfind("data.mdb.damaged-", 0) == 0;
  EXPECT_EQ(aside, 1u);
}

}  // namespace
}  // namespace kd
