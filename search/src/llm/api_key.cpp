#include "llm/api_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::llm {
namespace {

constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;

[[noreturn]] void usage_error(const std::string& message) {
  throw Error(ErrorDomain::usage, 0, "llm api key: " + message);
}

std::string trimmed(std::string text) {
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  text.erase(text.begin(), std::find_if_not(text.begin(), text.end(), is_space));
  text.erase(std::find_if_not(text.rbegin(), text.rend(), is_space).base(), text.end());
  return text;
}

// Closes the descriptor on every path out of read_key_file.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

ApiKey read_key_file(const std::filesystem::path& path) {
  // O_NOFOLLOW: a symlink could point anywhere; its target's mode is what matters and the
  // owner may not control it. fstat on the opened descriptor avoids a check-then-open race.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    usage_error(fmt::format("cannot open key file {}: {}", path.string(), std::strerror(errno)));
  }
  FdCloser closer{fd};
  struct stat st {};
  KD_SYS_CHECK(::fstat(fd, &st), path.string());
  if (!S_ISREG(st.st_mode)) usage_error(fmt::format("key file {} is not a regular file", path.string()));
  if (st.st_uid != ::geteuid()) {
    usage_error(fmt::format("key file {} is owned by uid {}, not by this user (uid {})",
                            path.string(), st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    usage_error(fmt::format("key file {} has mode {:04o}: it must be readable only by its owner "
                            "(chmod 600 {})",
                            path.string(), st.st_mode & 07777, path.string()));
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxKeyFileBytes) {
    usage_error(fmt::format("key file {} is larger than {} bytes", path.string(), kMaxKeyFileBytes));
  }
  std::string contents(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < contents.size()) {
    const ssize_t n = ::read(fd, contents.data() + got, contents.size() - got);
    if (n < 0 && errno == EINTR) continue;
    KD_SYS_CHECK(n, path.string());
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  contents.resize(got);
  std::string key = trimmed(std::move(contents));
  if (key.empty()) usage_error(fmt::format("key file {} is empty", path.string()));
  return ApiKey(std::move(key));
}

}  // namespace

ApiKey::~ApiKey() {
  volatile char* p = value_.data();
  for (std::size_t i = 0; i < value_.size(); ++i) p[i] = '\0';
}

std::string ApiKey::redact(std::string_view text) const {
  std::string out(text);
  if (value_.empty()) return out;
  constexpr std::string_view kMask = "[redacted]";
  for (std::size_t pos = out.find(value_); pos != std::string::npos;
       pos = out.find(value_, pos + kMask.size())) {
    out.replace(pos, value_.size(), kMask);
  }
  return out;
}

ApiKey load_api_key(const KeySource& source) {
  struct Loader {
    ApiKey operator()(const NoKey&) const { return ApiKey(); }
    ApiKey operator()(const KeyFromEnv& env) const {
      if (env.variable.empty()) usage_error("no environment variable named for the key");
      const char* value = std::getenv(env.variable.c_str());
      std::string key = value ? trimmed(value) : std::string();
      if (key.empty()) {
        usage_error(fmt::format("environment variable {} is not set or empty", env.variable));
      }
      return ApiKey(std::move(key));
    }
    ApiKey operator()(const KeyFromFile& file) const { return read_key_file(file.path); }
  };
  return std::visit(Loader{}, source);
}

}  // namespace kd::llm
