#include "store/lmdb.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include "common/error.hpp"
#include "support/temp_dir.hpp"

namespace kd::lmdb {
namespace {

TEST(Lmdb, PutThenGetInANewEnvironment) {
  test::TempDir dir;
  {
    Env env(dir.path() / "cache", Access::read_write);
    Txn txn(env, Access::read_write);
    const MDB_dbi dbi = *open_db(txn, "records", true);
    put(txn, dbi, "gemm m=1", "payload-1");
    put(txn, dbi, "gemm m=2", std::string("bin\0ary", 7));
    txn.commit();
  }
  Env env(dir.path() / "cache", Access::read_only);
  Txn txn(env, Access::read_only);
  const auto dbi = open_db(txn, "records", false);
  ASSERT_TRUE(dbi.has_value());
  EXPECT_EQ(get(txn, *dbi, "gemm m=1"), std::optional<std::string_view>("payload-1"));
  EXPECT_EQ(get(txn, *dbi, "gemm m=2")->size(), 7u);
  EXPECT_FALSE(get(txn, *dbi, "gemm m=3").has_value());
}

TEST(Lmdb, ReadOnlyTransactionResetAndRenewSeesNewCommits) {
  test::TempDir dir;
  Env writer(dir.path(), Access::read_write);
  {
    Txn w(writer, Access::read_write);
    put(w, *open_db(w, "meta", true), "generation", "1");
    w.commit();
  }
  // One environment per process (LMDB's rule); the reader is another transaction on it.
  Txn r(writer, Access::read_only);
  const MDB_dbi dbi = *open_db(r, "meta", false);
  EXPECT_EQ(*get(r, dbi, "generation"), "1");
  {
    Txn w(writer, Access::read_write);
    put(w, *open_db(w, "meta", true), "generation", "2");
    w.commit();
  }
  EXPECT_EQ(*get(r, dbi, "generation"), "1");  // snapshot isolation
  r.reset();
  r.renew();
  EXPECT_EQ(*get(r, dbi, "generation"), "2");
}

TEST(Lmdb, OpeningAMissingCacheReadOnlyNamesThePath) {
  test::TempDir dir;
  try {
    Env env(dir.path() / "nowhere", Access::read_only);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::lmdb);
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
    // Users see the path and the problem; the call's source text and location are for debug logs.
    EXPECT_EQ(std::string(e.what()).find("mdb_env_open("), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(".cpp"), std::string::npos) << e.what();
    EXPECT_NE(e.detail().find("mdb_env_open("), std::string::npos) << e.detail();
    EXPECT_NE(e.detail().find("lmdb.cpp:"), std::string::npos) << e.detail();
  }
}

TEST(Lmdb, ErrorMessagesNameTheFunctionAndTheFix) {
  EXPECT_EQ(called_function("mdb_env_open(raw, where.c_str(), flags, 0644)"), "mdb_env_open");
  EXPECT_EQ(called_function("cu().cuModuleLoadData(&module, image.data())"), "cuModuleLoadData");
  EXPECT_EQ(called_function("::open(path.c_str(), O_RDWR | O_CREAT)"), "open");
  EXPECT_EQ(called_function("rc"), "");
  try {
    throw_lmdb_error(EACCES, "mdb_env_open(raw, where.c_str(), flags, 0644)", "/srv/cache", KD_WHERE);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/srv/cache: permission denied (run as the cache's owner or a member of its group)");
  }
  try {
    throw_system_error(ECONNREFUSED, "::connect(fd, addr, len)", "/run/kd.sock", KD_WHERE);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "connect failed on /run/kd.sock: Connection refused");
  }
}

TEST(Lmdb, DeleteReportsWhetherTheKeyExisted) {
  test::TempDir dir;
  Env env(dir.path(), Access::read_write);
  Txn txn(env, Access::read_write);
  const MDB_dbi dbi = *open_db(txn, "jobs", true);
  put(txn, dbi, "k", "v");
  EXPECT_TRUE(del(txn, dbi, "k"));
  EXPECT_FALSE(del(txn, dbi, "k"));
}

}  // namespace
}  // namespace kd::lmdb
