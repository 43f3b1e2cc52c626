#include "llm/api_key.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "support/temp_dir.hpp"

namespace kd::llm {
namespace {

constexpr const char* kSecret = "sk-test-0123456789abcdef";

std::filesystem::path write_key(const test::TempDir& dir, const char* name, mode_t mode,
                                const std::string& contents = std::string(kSecret) + "\n") {
  const auto path = dir.path() / name;
  std::ofstream(path) << contents;
  ::chmod(path.c_str(), mode);
  return path;
}

// The error's text, checked never to hold the secret.
std::string load_error(const KeySource& source) {
  try {
    load_api_key(source);
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::usage);
    EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos);
    return e.what();
  }
  ADD_FAILURE() << "no throw";
  return {};
}

TEST(ApiKey, FromEnvironmentTrimmed) {
  ::setenv("KD_TEST_KEY_ENV", "  sk-env \n", 1);
  EXPECT_EQ(load_api_key(KeyFromEnv{"KD_TEST_KEY_ENV"}).reveal(), "sk-env");
  ::unsetenv("KD_TEST_KEY_ENV");
  EXPECT_NE(load_error(KeyFromEnv{"KD_TEST_KEY_ENV"}).find("KD_TEST_KEY_ENV"), std::string::npos);
}

TEST(ApiKey, FromOwnerOnlyFile) {
  test::TempDir dir;
  EXPECT_EQ(load_api_key(KeyFromFile{write_key(dir, "k600", 0600)}).reveal(), kSecret);
  EXPECT_EQ(load_api_key(KeyFromFile{write_key(dir, "k400", 0400)}).reveal(), kSecret);
}

TEST(ApiKey, FileReadableByOthersIsRefused) {
  test::TempDir dir;
  const std::string message = load_error(KeyFromFile{write_key(dir, "k644", 0644)});
  EXPECT_NE(message.find("0644"), std::string::npos) << message;
  EXPECT_NE(message.find("chmod 600"), std::string::npos) << message;
  load_error(KeyFromFile{write_key(dir, "k640", 0640)});
}

TEST(ApiKey, SymlinkMissingAndEmptyFilesAreRefused) {
  test::TempDir dir;
  const auto target = write_key(dir, "real", 0600);
  std::filesystem::create_symlink(target, dir.path() / "link");
  load_error(KeyFromFile{dir.path() / "link"});
  EXPECT_NE(load_error(KeyFromFile{dir.path() / "absent"}).find("absent"), std::string::npos);
  EXPECT_NE(load_error(KeyFromFile{write_key(dir, "empty", 0600, "\n")}).find("empty"),
            std::string::npos);
}

TEST(ApiKey, RedactReplacesEveryOccurrence) {
  const ApiKey key{std::string(kSecret)};
  EXPECT_EQ(key.redact(std::string("a ") + kSecret + " b " + kSecret), "a [redacted] b [redacted]");
  EXPECT_EQ(ApiKey().redact("text"), "text");
}

}  // namespace
}  // namespace kd::llm
