// The daemon protocol's messages. Every payload is a JSON object with "v": 1 and "type".
//
//   client -> daemon   {"v":1,"type":"hello","pid":1234,"client":"libkdispatch"}
//                      {"v":1,"type":"miss","key":"<full key line>","count":3}
//                      {"v":1,"type":"subscribe"}
//                      {"v":1,"type":"client_stats","pid":1234,"program":"python3",
//                       "instance":"9f3a...","hits":10,"misses":2,"fallbacks":{"no_entry":2},
//                       "loads":1,"swaps":0}
//                      {"v":1,"type":"usage","keys":["<full key line>", ...]}
//   daemon -> client   {"v":1,"type":"hello_ok","features":["client_stats"],...}
//                      {"v":1,"type":"published","key":"<full key line>","generation":42}
//                      {"v":1,"type":"error","message":"..."}
//
// Unknown fields are ignored (forward compatibility); a missing or mistyped field, another
// version or an unknown type is a ProtocolError.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kd::protocol {

inline constexpr int kProtocolVersion = 1;

// Optional messages a daemon announces in hello_ok's `features`. A client sends such a message
// only to a daemon that announced it: an older daemon answers an unknown type with an error and
// closes the connection.
inline constexpr std::string_view kFeatureClientStats = "client_stats";
inline constexpr std::string_view kFeatureUsage = "usage";

struct Hello {
  std::int64_t pid = 0;
  std::string client;
  bool operator==(const Hello&) const = default;
};
struct Miss {
  std::string key;  // full key line, device part included
  std::uint64_t count = 1;
  bool operator==(const Miss&) const = default;
};
struct Subscribe {
  bool operator==(const Subscribe&) const = default;
};
// A process's call counters, cumulative since its dispatcher started (kd_init), so a report that
// is lost or repeated changes nothing: the daemon counts the difference to the last report of the
// same `instance`. Fallback reasons are named as kd_fallback_reason_name() names them; zero counts
// are left out. `final` marks the last report, sent while the process exits.
struct ClientStats {
  std::int64_t pid = 0;
  std::string program;   // the process's short name (program_invocation_short_name)
  std::string instance;  // random id of this dispatcher: a pid the kernel reuses is another instance
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::map<std::string, std::uint64_t> fallbacks;
  std::uint64_t loads = 0;
  std::uint64_t swaps = 0;
  bool final = false;
  bool operator==(const ClientStats&) const = default;
};
// The full key lines of the records a process hit since its last report (libkdispatch's usage
// marks), at most kMaxUsageKeys per message: the daemon's least-recently-used eviction goes by them.
inline constexpr std::size_t kMaxUsageKeys = 2048;
struct Usage {
  std::vector<std::string> keys;
  bool operator==(const Usage&) const = default;
};
struct Published {
  std::string key;
  std::uint64_t generation = 0;
  bool operator==(const Published&) const = default;
};
struct ErrorMessage {
  std::string message;
  bool operator==(const ErrorMessage&) const = default;
};

// A daemon reply the client needs few fields of (`hello_ok` to hello, `ok` to subscribe).
struct Acknowledged {
  std::string type;                   // "hello_ok" or "ok"
  std::vector<std::string> features;  // hello_ok's optional messages the daemon accepts
  bool operator==(const Acknowledged&) const = default;
};

using Message =
    std::variant<Hello, Miss, Subscribe, ClientStats, Usage, Published, ErrorMessage, Acknowledged>;

struct ProtocolError {
  std::string message;  // "protocol: bad JSON: ...", "protocol: version 2, expected 1", ...
};

// Limits of a client_stats message, so that what one client sends stays small in the daemon.
inline constexpr std::size_t kMaxProgramBytes = 256;      // printable ASCII
inline constexpr std::size_t kMaxInstanceBytes = 64;     // [A-Za-z0-9_-]
inline constexpr std::size_t kMaxFallbackReasons = 64;   // names of 1..64 bytes of [a-z0-9_]
inline constexpr std::size_t kMaxReasonNameBytes = 64;
// What breaks those limits ("protocol: client_stats 'instance' ..."), or nullopt.
std::optional<std::string> client_stats_problem(const ClientStats& s);

// Text a peer sent, or made from what it sent, cut to at most `max_bytes` bytes (on a UTF-8
// character boundary, "..." included) so that echoing it back stays small.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);
// An error message is cut to this many bytes (truncate_utf8) when it is encoded.
inline constexpr std::size_t kMaxErrorMessageBytes = 4096;

// The JSON payload of a message (not framed). Invalid UTF-8 in strings is replaced (U+FFFD), so
// this never throws for text a peer sent.
std::string to_json(const Message& m);
// A complete frame: encode_frame(to_json(m)). Throws as encode_frame does (a Published or Miss
// key longer than the frame; error messages are bounded and always fit).
std::string encode_message(const Message& m);
// Never throws.
std::variant<Message, ProtocolError> decode_message(std::string_view json_payload) noexcept;

// Where the daemon listens: $KD_SOCKET, else $XDG_RUNTIME_DIR/kdispatch.sock, else
// <cache_dir>/kdispatch.sock.
std::filesystem::path daemon_socket_path(const std::filesystem::path& cache_dir);

}  // namespace kd::protocol
