// The daemon protocol's framing, shared by libkdispatch's client and kdispatchd.
//
// A frame is a 4-byte big-endian payload length followed by that many bytes of UTF-8 JSON (one
// object). Payloads are at most kMaxFramePayloadBytes; a longer announced length is a protocol
// error and the connection must be closed (the stream cannot be resynchronised).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace kd::protocol {

inline constexpr std::size_t kMaxFramePayloadBytes = std::size_t{1} << 20;
inline constexpr std::size_t kFrameHeaderBytes = 4;

// Whether a payload of this size may be sent in one frame.
constexpr bool fits_in_frame(std::size_t payload_bytes) noexcept {
  return payload_bytes <= kMaxFramePayloadBytes;
}

// Header + payload. Throws kd::Error (usage) when the payload is longer than the maximum: a
// sender that builds payloads from data of unbounded size checks fits_in_frame first (the daemon
// never lets this throw out of its io loop: server.hpp, reply_frame).
std::string encode_frame(std::string_view payload);

enum class FrameError : std::uint8_t {
  oversized,  // announced length > kMaxFramePayloadBytes: close the connection
  truncated,  // end of stream inside a frame (only from finish())
};
std::string_view to_string(FrameError e);

// Splits a byte stream into frame payloads. Feed bytes as they arrive; next() returns each
// complete payload in order.
class FrameDecoder {
public:
  struct NeedMore {};
  using Next = std::variant<std::string, NeedMore, FrameError>;

  void feed(std::string_view bytes);
  Next next();
  // At end of stream: truncated when a partial frame is buffered, else NeedMore.
  Next finish() const;
  std::size_t buffered_bytes() const noexcept { return buffer_.size() - consumed_; }

private:
  std::string buffer_;
  std::size_t consumed_ = 0;
  bool failed_ = false;
};

}  // namespace kd::protocol
