// The cache store within one process: the writer, raw databases, errors, default_cache_dir, and a
// reader on a missing directory. Readers next to a writer live in cache_store_process_test.cpp.
#include "store/cache_store.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "child_process.hpp"
#include "common/error.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "test_records.hpp"

namespace kd {
namespace {

using test::ScopedEnv;

TEST(DefaultCacheDir, FollowsKdCacheDirThenXdgThenHome) {
  {
    ScopedEnv kd("KD_CACHE_DIR", "/srv/kd-cache");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_cache_dir(), "/srv/kd-cache");
  }
  {
    ScopedEnv kd("KD_CACHE_DIR", "");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(default_cache_dir(), "/xdg/kdispatch");
  }
  {
    ScopedEnv kd("KD_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(default_cache_dir(), "/home/u/.cache/kdispatch");
  }
  {
    ScopedEnv kd("KD_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    const auto dir = default_cache_dir();
    EXPECT_TRUE(dir.is_absolute()) << dir;
    // The passwd entry's home, or /tmp/kdispatch-<uid> without one.
    EXPECT_TRUE(dir.filename() == "kdispatch" || dir.string().rfind("/tmp/kdispatch-", 0) == 0) << dir;
  }
}

TEST(LookupMiss, NamesEveryReason) {
  EXPECT_EQ(to_string(LookupMiss::not_found), "not_found");
  EXPECT_EQ(to_string(LookupMiss::corrupted), "corrupted");
  EXPECT_EQ(to_string(LookupMiss::schema_mismatch), "schema_mismatch");
  EXPECT_EQ(to_string(LookupMiss::foreign_device), "foreign_device");
  EXPECT_EQ(to_string(LookupMiss::foreign_versions), "foreign_versions");
  EXPECT_EQ(to_string(LookupMiss::cache_unavailable), "cache_unavailable");
}

TEST(CacheWriter, CreatesTheCacheWithSchemaAndGenerationZero) {
  test::TempDir tmp;
  const auto dir = tmp.path() / "a" / "cache";
  CacheWriter writer(dir);
  EXPECT_TRUE(std::filesystem::exists(dir / "data.mdb"));
  EXPECT_EQ(writer.get_raw("meta", "schema"), std::to_string(kCacheSchemaVersion));
  EXPECT_EQ(writer.get_raw("meta", "generation"), "0");
  EXPECT_EQ(writer.generation(), 0u);
}

TEST(CacheWriter, PublishAndEvictBumpTheGeneration) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  EXPECT_EQ(writer.commit_record(test::make_record(1, test::key_for(1))), 1u);
  EXPECT_EQ(writer.commit_record(test::make_record(2, test::key_for(2))), 2u);
  EXPECT_EQ(writer.commit_record(test::make_record(3, test::key_for(1))), 3u);  // replaces
  EXPECT_EQ(writer.get_raw("meta", "generation"), "3");
  const auto stored = writer.get_raw("records", test::key_for(1));
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(std::get<Record>(deserialize_record(*stored)), test::make_record(3, test::key_for(1)));

  EXPECT_TRUE(writer.evict(test::key_for(1)));
  EXPECT_EQ(writer.generation(), 4u);
  EXPECT_FALSE(writer.evict(test::key_for(1)));
  EXPECT_EQ(writer.generation(), 4u);
  EXPECT_EQ(writer.scan_raw("records").size(), 1u);
}

TEST(CacheWriter, RawDatabasesPutGetDeleteAndScanInKeyOrder) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  writer.put_raw("trees", "s2", "{\"b\":1}");
  writer.put_raw("trees", "s1", std::string("bin\0ary", 7));
  writer.put_raw("custom", "k", "v");  // created on first put
  EXPECT_EQ(writer.get_raw("trees", "s1")->size(), 7u);
  EXPECT_EQ(writer.get_raw("custom", "k"), "v");
  EXPECT_FALSE(writer.get_raw("trees", "none").has_value());
  EXPECT_FALSE(writer.get_raw("no_such_db", "k").has_value());
  EXPECT_TRUE(writer.scan_raw("no_such_db").empty());
  EXPECT_FALSE(writer.del_raw("no_such_db", "k"));

  const auto entries = writer.scan_raw("trees");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "s1");
  EXPECT_EQ(entries[1].first, "s2");
  EXPECT_TRUE(writer.del_raw("trees", "s1"));
  EXPECT_FALSE(writer.del_raw("trees", "s1"));
  EXPECT_EQ(writer.generation(), 0u);  // raw writes are not publications
}

TEST(CacheWriter, ReopeningKeepsRecordsAndGeneration) {
  test::TempDir tmp;
  { CacheWriter(tmp.path()).commit_record(test::make_record(1, test::key_for(1))); }
  CacheWriter writer(tmp.path());
  EXPECT_EQ(writer.generation(), 1u);
  EXPECT_TRUE(writer.get_raw("records", test::key_for(1)).has_value());
}

TEST(CacheWriter, MovedWriterKeepsWorking) {
  test::TempDir tmp;
  CacheWriter first(tmp.path());
  CacheWriter second(std::move(first));
  EXPECT_EQ(second.commit_record(test::make_record(1, test::key_for(1))), 1u);
  test::TempDir other;
  CacheWriter third(other.path());
  third = std::move(second);
  EXPECT_EQ(third.generation(), 1u);
}

TEST(CacheWriter, RefusesACacheOfAnotherSchemaNamingBoth) {
  test::TempDir tmp;
  { CacheWriter(tmp.path()).put_raw("meta", "schema", "2"); }
  try {
    CacheWriter writer(tmp.path());
    FAIL() << "expected kd::Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("has schema \"2\""), std::string::npos) << what;
    EXPECT_NE(what.find("writes schema 1"), std::string::npos) << what;
  }
}

TEST(CacheWriter, AFullMapSaysTheCacheIsFullAndKeepsEarlierRecords) {
  test::TempDir tmp;
  lmdb::EnvOptions small;
  small.map_size_bytes = std::size_t{1} << 20;
  CacheWriter writer(tmp.path(), small);
  Record big = test::make_record(1, "");
  big.cubin.assign(std::size_t{96} << 10, '\x5a');
  std::uint64_t published = 0;
  bool full = false;
  for (int i = 0; i < 64 && !full; ++i) {
    big.key_line = test::key_for(i);
    try {
      published = writer.commit_record(big);
    } catch (const Error& e) {
      full = true;
      EXPECT_EQ(e.code(), MDB_MAP_FULL);
      EXPECT_NE(std::string(e.what()).find("is full"), std::string::npos) << e.what();
    }
  }
  ASSERT_TRUE(full) << "1 MiB map never filled";
  EXPECT_GT(published, 0u);
  EXPECT_EQ(writer.generation(), published);
  EXPECT_TRUE(writer.evict(test::key_for(0)));  // the environment is still usable
}

TEST(CacheWriter, RejectsARecordWithoutKey) {
  test::TempDir tmp;
  CacheWriter writer(tmp.path());
  EXPECT_THROW(writer.commit_record(test::make_record(1, "")), Error);
  EXPECT_EQ(writer.generation(), 0u);
}

TEST(CacheReader, MissingDirectoryIsUnavailableAndThenAppears) {
  test::TempDir tmp;
  const auto dir = tmp.path() / "not-yet";
  CacheReader reader(dir);
  EXPECT_FALSE(reader.available());
  EXPECT_NE(reader.unavailable_reason().find("not-yet"), std::string::npos)
      << reader.unavailable_reason();
  EXPECT_EQ(reader.lookup(test::key_for(1)), (std::variant<Record, LookupMiss>(LookupMiss::cache_unavailable)));
  EXPECT_EQ(reader.refresh(), 0u);
  EXPECT_TRUE(reader.list_keys().empty());
  EXPECT_FALSE(std::filesystem::exists(dir));  // readers create nothing

  // This process holds no environment while unavailable, so a child may write the cache.
  test::ChildProcess writer_child([&] {
    CacheWriter writer(dir);
    return writer.commit_record(test::make_record(1, test::key_for(1))) == 1 ? 0 : 1;
  });
  ASSERT_EQ(writer_child.wait(), 0);

  EXPECT_EQ(reader.refresh(), 1u);
  EXPECT_TRUE(reader.available()) << reader.unavailable_reason();
  EXPECT_TRUE(reader.unavailable_reason().empty());
  EXPECT_EQ(reader.lookup(test::key_for(1)),
            (std::variant<Record, LookupMiss>(test::make_record(1, test::key_for(1)))));
}

TEST(CacheReader, EmptyDirectoryIsUnavailable) {
  test::TempDir tmp;
  CacheReader reader(tmp.path());
  EXPECT_FALSE(reader.available());
  EXPECT_FALSE(reader.unavailable_reason().empty());
  EXPECT_EQ(std::get<LookupMiss>(reader.lookup("k")), LookupMiss::cache_unavailable);
}

}  // namespace
}  // namespace kd
