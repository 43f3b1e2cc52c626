// What the subcommands that talk to kdispatchd share: the --socket/--cache-dir flags, the socket
// they resolve to, and telling the daemon that kdctl wrote its cache (import, evict).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace kd::kdctl {

struct DaemonArgs {
  std::string socket;     // empty: the default socket path
  std::string cache_dir;  // empty: default_cache_dir()
};

// --socket, or protocol::daemon_socket_path of --cache-dir (or of the default cache).
std::filesystem::path socket_of(const DaemonArgs& a);
// Registers --socket and --cache-dir.
void add_daemon_flags(CLI::App& sub, DaemonArgs& a);
// Registers --socket only (for subcommands that have their own --cache-dir).
void add_socket_flag(CLI::App& sub, std::string& socket);

// kdctl's writing subcommands (import, evict, search --cache-dir, verify) write the cache
// themselves (LMDB serializes them with the daemon's writes; a record may be larger than a
// protocol frame). Afterwards they tell the kdispatchd that serves that cache (a `cache_changed` message naming the changed keys), which re-reads the
// generation and pushes `published` to its subscribers, so running applications load the change
// now. `line` says what happened, for the command's output.
struct DaemonNotice {
  enum class Outcome : std::uint8_t {
    told,         // the daemon serving this cache re-read the generation and told its subscribers
    no_daemon,    // nothing answers on the socket: nobody to tell
    other_cache,  // the daemon on the socket serves another cache directory
    failed,       // the daemon answered but the notice failed (it notices within seconds anyway)
  };
  Outcome outcome = Outcome::no_daemon;
  std::string line;
};
// Never throws (beyond std::bad_alloc). `keys` are the full key lines written or removed.
DaemonNotice tell_daemon_cache_changed(const std::filesystem::path& socket, const std::filesystem::path& cache_dir,
                                       const std::vector<std::string>& keys);

// Prints `notice.line` after "`command`: " ("kdctl evict"): on stdout when the daemon was told,
// on stderr otherwise (the cache was written without a daemon knowing, or the notice failed).
void print_daemon_notice(std::string_view command, const DaemonNotice& notice);

}  // namespace kd::kdctl
