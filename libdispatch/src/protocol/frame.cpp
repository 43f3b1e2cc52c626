#include "protocol/frame.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::protocol {

std::string encode_frame(std::string_view payload) {
  if (payload.size() > kMaxFramePayloadBytes)
    throw Error(ErrorDomain::usage, 0,
                fmt::format("protocol: frame payload of {} bytes exceeds the {} byte limit",
                            payload.size(), kMaxFramePayloadBytes));
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(payload);
  return out;
}

std::string_view to_string(FrameError e) {
  switch (e) {
    case FrameError::oversized: return "oversized frame";
    case FrameError::truncated: return "truncated frame";
  }
  return "?";
}

void FrameDecoder::feed(std::string_view bytes) {
  if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {  // compact now and then, not per frame
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

FrameDecoder::Next FrameDecoder::next() {
  if (failed_) return FrameError::oversized;
  const std::size_t avail = buffer_.size() - consumed_;
  if (avail < kFrameHeaderBytes) return NeedMore{};
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
  const std::uint32_t n = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                          (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
  if (n > kMaxFramePayloadBytes) {
    failed_ = true;
    return FrameError::oversized;
  }
  if (avail < kFrameHeaderBytes + n) return NeedMore{};
  std::string payload = buffer_.substr(consumed_ + kFrameHeaderBytes, n);
  consumed_ += kFrameHeaderBytes + n;
  return payload;
}

FrameDecoder::Next FrameDecoder::finish() const {
  if (failed_) return FrameError::oversized;
  if (buffer_.size() > consumed_) return FrameError::truncated;
  return NeedMore{};
}

}  // namespace kd::protocol
