// The worker protocol's framing: each message is
//   [u32 header length, little endian][u64 blob length, little endian][header: JSON][blob: bytes]
// over a stream socket (the worker's stdin/stdout). The blob carries a cubin; it is empty
// otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kd::worker {

inline constexpr std::uint32_t kMaxHeaderBytes = 16u << 20;
inline constexpr std::uint64_t kMaxBlobBytes = 512ull << 20;

struct Frame {
  nlohmann::json header;
  std::string blob;
};

std::string encode_frame(const Frame& frame);
// Decodes exactly one frame occupying all of `bytes`; throws kd::Error (data) when malformed.
Frame decode_frame(std::string_view bytes);

enum class ReadStatus { ok, eof, timeout };

// Reads one frame from `fd`. Without a deadline it waits indefinitely. eof: the peer closed
// before a frame began (or mid-frame: a peer that died while writing). Throws kd::Error (data)
// for a malformed frame, (system) for an I/O error.
ReadStatus read_frame(int fd, Frame& out,
                      std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// Writes one frame; MSG_NOSIGNAL on sockets, so a dead peer is an error, not SIGPIPE.
// Throws kd::Error (system) on failure.
void write_frame(int fd, const Frame& frame);

}  // namespace kd::worker
