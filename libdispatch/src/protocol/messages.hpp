// The daemon protocol's messages. Every payload is a JSON object with "v": 1 and "type".
//
//   client -> daemon   {"v":1,"type":"hello","pid":1234,"client":"libkdispatch"}
//                      {"v":1,"type":"miss","key":"<full key line>","count":3}
//                      {"v":1,"type":"subscribe"}
//   daemon -> client   {"v":1,"type":"published","key":"<full key line>","generation":42}
//                      {"v":1,"type":"error","message":"..."}
//
// Unknown fields are ignored (forward compatibility); a missing or mistyped field, another
// version or an unknown type is a ProtocolError.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>

namespace kd::protocol {

inline constexpr int kProtocolVersion = 1;

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
struct Published {
  std::string key;
  std::uint64_t generation = 0;
  bool operator==(const Published&) const = default;
};
struct ErrorMessage {
  std::string message;
  bool operator==(const ErrorMessage&) const = default;
};

// A daemon reply the client needs no fields of (`hello_ok` to hello, `ok` to subscribe):
// acknowledged and otherwise ignored.
struct Acknowledged {
  std::string type;  // "hello_ok" or "ok"
  bool operator==(const Acknowledged&) const = default;
};

using Message = std::variant<Hello, Miss, Subscribe, Published, ErrorMessage, Acknowledged>;

struct ProtocolError {
  std::string message;  // "protocol: bad JSON: ...", "protocol: version 2, expected 1", ...
};

// The JSON payload of a message (not framed).
std::string to_json(const Message& m);
// A complete frame: encode_frame(to_json(m)).
std::string encode_message(const Message& m);
// Never throws.
std::variant<Message, ProtocolError> decode_message(std::string_view json_payload) noexcept;

// Where the daemon listens: $KD_SOCKET, else $XDG_RUNTIME_DIR/kdispatch.sock, else
// <cache_dir>/kdispatch.sock.
std::filesystem::path daemon_socket_path(const std::filesystem::path& cache_dir);

}  // namespace kd::protocol
