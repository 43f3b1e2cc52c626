#include "daemon_link.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "commands.hpp"
#include "ctl_client/ctl_client.hpp"
#include "protocol/messages.hpp"
#include "store/cache_store.hpp"

namespace kd::kdctl {
namespace {

// The daemon announces at most 256 keys per notice (PROTOCOL.md, cache_changed); any `published`
// makes a client refresh its whole snapshot, so the others load as well.
constexpr std::size_t kMaxKeysPerNotice = 256;
constexpr std::chrono::seconds kNoticeTimeout{10};

bool same_directory(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  const bool same = std::filesystem::equivalent(a, b, ec);
  return !ec && same;
}

}  // namespace

std::filesystem::path socket_of(const DaemonArgs& a) {
  if (!a.socket.empty()) return a.socket;
  return protocol::daemon_socket_path(a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir));
}

void add_socket_flag(CLI::App& sub, std::string& socket) {
  sub.add_option("--socket", socket,
                 "kdispatchd socket (default: KD_SOCKET, $XDG_RUNTIME_DIR/kdispatch.sock, else <cache>/kdispatch.sock)");
}

void add_daemon_flags(CLI::App& sub, DaemonArgs& a) {
  add_socket_flag(sub, a.socket);
  add_cache_dir_flag(sub, a.cache_dir);
}

DaemonNotice tell_daemon_cache_changed(const std::filesystem::path& socket, const std::filesystem::path& cache_dir,
                                       const std::vector<std::string>& keys) {
  using Outcome = DaemonNotice::Outcome;
  std::optional<daemon::Client> client;
  daemon::Answer<protocol::Status> answer;
  try {
    client.emplace(socket);
    answer = client->call(protocol::StatusQuery{}, kNoticeTimeout);
  } catch (const std::exception&) {
    return {Outcome::no_daemon,
            fmt::format("no kdispatchd answers on {}: the cache was written directly; running applications "
                        "see the change at their next generation poll",
                        socket.string())};
  }
  const auto* status = std::get_if<protocol::Status>(&answer);
  const std::string served = status != nullptr ? status->cache_dir : std::string();
  if (status == nullptr || !same_directory(served, cache_dir))
    return {Outcome::other_cache,
            fmt::format("the kdispatchd on {} serves another cache ({}): the cache was written directly", socket.string(),
                        served)};
  const auto pid = status->pid;
  protocol::CacheChanged notice{{keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(
                                                                 std::min(keys.size(), kMaxKeysPerNotice))},
                                keys.size()};
  try {
    const auto reply = client->call(notice, kNoticeTimeout);
    if (const auto* refused = std::get_if<protocol::ErrorMessage>(&reply))
      return {Outcome::failed, fmt::format("kdispatchd (pid {}) on {} could not take the notice ({}); it reads the "
                                           "generation again within seconds",
                                           pid, socket.string(), refused->message)};
    const auto& told = std::get<protocol::CacheChangedOk>(reply);
    return {Outcome::told, fmt::format("kdispatchd (pid {}) serves this cache: told it; generation {} published to {} "
                                       "subscriber(s)",
                                       pid, told.generation, told.subscribers)};
  } catch (const std::exception& e) {
    return {Outcome::failed, fmt::format("kdispatchd (pid {}) on {} went away before it was told ({}); a daemon reads "
                                         "the generation at its start",
                                         pid, socket.string(), e.what())};
  }
}

void print_daemon_notice(std::string_view command, const DaemonNotice& notice) {
  if (notice.outcome == DaemonNotice::Outcome::told)
    std::printf("%s\n", notice.line.c_str());
  else
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(command.size()), command.data(), notice.line.c_str());
}

}  // namespace kd::kdctl
