// The messages libkdispatch's application runtime and kdispatchd exchange (PROTOCOL.md), with
// their JSON conversions (codec.hpp). The operator's requests are in requests.hpp, the status and
// stats replies in status.hpp.
//
//   client -> daemon   {"v":1,"type":"hello","pid":1234,"client":"libkdispatch"}
//                      {"v":1,"type":"miss","key":"<full key line>","count":3}
//                      {"v":1,"type":"miss","keys":[{"key":"...","count":1},...],"hits":9,"ack":true}
//                      {"v":1,"type":"subscribe"}
//                      {"v":1,"type":"client_stats","pid":1234,"program":"python3",
//                       "instance":"9f3a...","hits":10,"misses":2,"fallbacks":{"no_entry":2},
//                       "loads":1,"swaps":0}
//                      {"v":1,"type":"usage","keys":["<full key line>", ...]}
//   daemon -> client   {"v":1,"type":"hello_ok","version":1,"daemon":"0.1.0","generation":4,
//                       "features":["client_stats","usage"]}
//                      {"v":1,"type":"ok","generation":4}                      (to subscribe)
//                      {"v":1,"type":"published","key":"<full key line>","generation":42}
//                      {"v":1,"type":"error","message":"..."}
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/codec.hpp"

namespace kd::protocol {

// Optional messages a daemon announces in hello_ok's `features`. A client sends such a message
// only to a daemon that announced it: an older daemon answers an unknown type with an error and
// closes the connection.
inline constexpr std::string_view kFeatureClientStats = "client_stats";
inline constexpr std::string_view kFeatureUsage = "usage";

// ---- daemon -> client ----

struct HelloOk {
  static constexpr std::string_view kType = "hello_ok";
  std::uint64_t version = kProtocolVersion;
  std::string daemon;                 // kdispatchd's version; empty from daemons that did not say
  std::uint64_t generation = 0;
  std::vector<std::string> features;  // the optional client messages it accepts; absent from older daemons
  bool operator==(const HelloOk&) const = default;
  // Read leniently: a client needs only its features, and what older daemons sent varies.
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.defaulted("version", m.version);
    v.defaulted("daemon", m.daemon);
    v.defaulted("generation", m.generation);
    v.optional("features", m.features);
  }
};
// The reply to subscribe.
struct Subscribed {
  static constexpr std::string_view kType = "ok";
  std::uint64_t generation = 0;
  bool operator==(const Subscribed&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("generation", m.generation);
  }
};
// A winner was committed, or another process changed the record of `key`; `key` is empty when the
// daemon does not know which keys changed, and after an eviction batch (`evicted` records).
struct Published {
  static constexpr std::string_view kType = "published";
  std::string key;
  std::uint64_t generation = 0;
  std::optional<std::uint64_t> evicted;
  bool operator==(const Published&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("key", m.key);
    v.required("generation", m.generation);
    v.optional("evicted", m.evicted);
  }
};
// The daemon cuts an error message to this many bytes (truncate_utf8), so that it always fits a
// frame.
inline constexpr std::size_t kMaxErrorMessageBytes = 4096;
struct ErrorMessage {
  static constexpr std::string_view kType = "error";
  std::string message;
  bool operator==(const ErrorMessage&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("message", m.message);
  }
};

// ---- client -> daemon ----

struct Hello {
  static constexpr std::string_view kType = "hello";
  using Reply = HelloOk;
  std::int64_t pid = 0;  // non-negative on the wire
  std::string client;
  bool operator==(const Hello&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("pid", m.pid, field::kNonNegativeInteger);
    v.required("client", m.client);
  }
  static void check(const Hello& m) { field::non_negative("pid", m.pid); }
};
struct MissEntry {
  std::string key;  // a key line (a full key with device part from applications)
  std::uint64_t count = 1;
  bool operator==(const MissEntry&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("key", m.key);
    v.defaulted("count", m.count);
  }
};
// One key (written as `key` and `count`) or a batch (`keys`). With `ack`, the daemon answers
// MissAck (requests.hpp) after the commit; without, nothing.
struct Miss {
  static constexpr std::string_view kType = "miss";
  std::vector<MissEntry> keys;
  std::uint64_t hits = 0;  // cache hits since the last report (written when nonzero)
  bool ack = false;
  bool operator==(const Miss&) const = default;
};
void to_json(nlohmann::json& j, const Miss& m);
void from_json(const nlohmann::json& j, Miss& m);
struct Subscribe : NoFields {
  static constexpr std::string_view kType = "subscribe";
  using Reply = Subscribed;
  bool operator==(const Subscribe&) const = default;
};
// A process's call counters, cumulative since its dispatcher started (kd_init), so a report that
// is lost or repeated changes nothing: the daemon counts the difference to the last report of the
// same `instance`. Fallback reasons are named as kd_fallback_reason_name() names them; zero counts
// are left out. `final` marks the last report, sent while the process exits. No reply.
struct ClientStats {
  static constexpr std::string_view kType = "client_stats";
  std::int64_t pid = 0;  // a process id: 0 to INT32_MAX on the wire
  std::string program;   // the process's short name (program_invocation_short_name)
  std::string instance;  // random id of this dispatcher: a pid the kernel reuses is another instance
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::map<std::string, std::uint64_t> fallbacks;
  std::uint64_t loads = 0;
  std::uint64_t swaps = 0;
  bool final = false;
  bool operator==(const ClientStats&) const = default;
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("pid", m.pid, field::kNonNegativeInteger);
    v.required("program", m.program);
    v.required("instance", m.instance);
    v.required("hits", m.hits);
    v.required("misses", m.misses);
    v.required("fallbacks", m.fallbacks, "an object of reason -> count");
    v.defaulted("loads", m.loads);
    v.defaulted("swaps", m.swaps);
    v.optional("final", m.final);
  }
  // Every field is checked before the daemon counts anything: a report outside the limits below
  // (client_stats_problem) is a protocol error.
  static void check(const ClientStats& m);
};
// Limits of a client_stats message, so that what one client sends stays small in the daemon.
inline constexpr std::size_t kMaxProgramBytes = 256;     // printable ASCII
inline constexpr std::size_t kMaxInstanceBytes = 64;     // [A-Za-z0-9_-]
inline constexpr std::size_t kMaxFallbackReasons = 64;   // names of 1..64 bytes of [a-z0-9_]
inline constexpr std::size_t kMaxReasonNameBytes = 64;
// What breaks those limits ("protocol: client_stats 'instance' ..."), or nullopt. from_json
// checks it.
std::optional<std::string> client_stats_problem(const ClientStats& s);

// The full key lines of the records a process hit since its last report (libkdispatch's usage
// marks), at most kMaxUsageKeys per message: the daemon's least-recently-used eviction goes by
// them. No reply.
inline constexpr std::size_t kMaxUsageKeys = 2048;
struct Usage {
  static constexpr std::string_view kType = "usage";
  std::vector<std::string> keys;
  bool operator==(const Usage&) const = default;
  static constexpr std::string_view kKeys = "an array of at most 2048 key lines";
  static_assert(kMaxUsageKeys == 2048, "kKeys names the bound");
  template <class V, class Self>
  static void fields(V& v, Self& m) {
    v.required("keys", m.keys, kKeys);
  }
  static void check(const Usage& m) {
    if (m.keys.size() > kMaxUsageKeys) field::mistyped("keys", kKeys);
  }
};

// What libkdispatch sends, and what it reads from the daemon.
using ClientMessage = std::variant<Hello, Miss, Subscribe, ClientStats, Usage>;
using DaemonMessage = std::variant<HelloOk, Subscribed, Published, ErrorMessage>;
// A complete frame. Throws as encode does (a Miss whose key is longer than a frame).
std::string encode_message(const ClientMessage& m);
// Never throws.
inline std::variant<DaemonMessage, ProtocolError> decode_daemon_message(std::string_view payload) noexcept {
  return decode_one_of<HelloOk, Subscribed, Published, ErrorMessage>(payload);
}

// Where the daemon listens: $KD_SOCKET, else $XDG_RUNTIME_DIR/kdispatch.sock, else
// <cache_dir>/kdispatch.sock.
std::filesystem::path daemon_socket_path(const std::filesystem::path& cache_dir);

}  // namespace kd::protocol
