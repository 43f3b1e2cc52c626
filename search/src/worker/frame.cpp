#include "worker/frame.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::worker {
namespace {

constexpr std::size_t kPrefixBytes = 12;

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])) << (8 * i);
  return v;
}

struct Lengths {
  std::uint32_t header;
  std::uint64_t blob;
};
Lengths parse_prefix(std::string_view prefix) {
  const Lengths l{static_cast<std::uint32_t>(get_le(prefix, 0, 4)), get_le(prefix, 4, 8)};
  if (l.header == 0 || l.header > kMaxHeaderBytes || l.blob > kMaxBlobBytes) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("worker frame: bad lengths (header {}, blob {})", l.header, l.blob));
  }
  return l;
}

nlohmann::json parse_header(std::string_view text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw Error(ErrorDomain::data, 0, "worker frame: header is not an object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorDomain::data, 0, std::string("worker frame: header is not JSON: ") + e.what());
  }
}

// Reads exactly n bytes. ok, eof (closed), or timeout.
ReadStatus read_exact(int fd, char* buf, std::size_t n,
                      std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::size_t got = 0;
  while (got < n) {
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ReadStatus::timeout;
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
      if (r == 0) continue;  // loop re-checks the deadline
      if (r < 0) {
        if (errno == EINTR) continue;
        throw_system_error(errno, "poll", "worker pipe", KD_WHERE);
      }
    }
    const ssize_t r = ::read(fd, buf + got, n - got);
    if (r == 0) return ReadStatus::eof;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return ReadStatus::eof;
      throw_system_error(errno, "read", "worker pipe", KD_WHERE);
    }
    got += static_cast<std::size_t>(r);
  }
  return ReadStatus::ok;
}

}  // namespace

std::string encode_frame(const Frame& frame) {
  const std::string header = frame.header.dump();
  std::string out;
  out.reserve(kPrefixBytes + header.size() + frame.blob.size());
  put_le(out, header.size(), 4);
  put_le(out, frame.blob.size(), 8);
  out += header;
  out += frame.blob;
  return out;
}

Frame decode_frame(std::string_view bytes) {
  if (bytes.size() < kPrefixBytes) throw Error(ErrorDomain::data, 0, "worker frame: truncated prefix");
  const Lengths l = parse_prefix(bytes.substr(0, kPrefixBytes));
  if (bytes.size() != kPrefixBytes + l.header + l.blob) {
    throw Error(ErrorDomain::data, 0,
                fmt::format("worker frame: {} bytes, prefix says {}", bytes.size(), kPrefixBytes + l.header + l.blob));
  }
  Frame f;
  f.header = parse_header(bytes.substr(kPrefixBytes, l.header));
  f.blob = std::string(bytes.substr(kPrefixBytes + l.header));
  return f;
}

ReadStatus read_frame(int fd, Frame& out, std::optional<std::chrono::steady_clock::time_point> deadline) {
  char prefix[kPrefixBytes];
  ReadStatus st = read_exact(fd, prefix, kPrefixBytes, deadline);
  if (st != ReadStatus::ok) return st;
  const Lengths l = parse_prefix(std::string_view(prefix, kPrefixBytes));
  std::string header(l.header, '\0');
  if ((st = read_exact(fd, header.data(), header.size(), deadline)) != ReadStatus::ok) return st;
  std::string blob(l.blob, '\0');
  if ((st = read_exact(fd, blob.data(), blob.size(), deadline)) != ReadStatus::ok) return st;
  out.header = parse_header(header);
  out.blob = std::move(blob);
  return ReadStatus::ok;
}

void write_frame(int fd, const Frame& frame) {
  const std::string bytes = encode_frame(frame);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t r = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (r < 0 && errno == ENOTSOCK) r = ::write(fd, bytes.data() + sent, bytes.size() - sent);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_system_error(errno, "send", "worker pipe", KD_WHERE);
    }
    sent += static_cast<std::size_t>(r);
  }
}

}  // namespace kd::worker
