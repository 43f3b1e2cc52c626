#include "deflate.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace kd::kdctl {
namespace {

constexpr std::size_t kWindow = 32768;  // deflate's largest distance
constexpr std::size_t kMinMatch = 3, kMaxMatch = 258;
constexpr int kHashBits = 15;
constexpr int kMaxChain = 64;  // candidates tried per position: enough for charts, bounded time

// RFC 1951, 3.2.5: the base of each length code (257..285) and distance code (0..29) and how many
// extra bits follow it.
constexpr std::array<std::uint16_t, 29> kLenBase{3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<std::uint8_t, 29> kLenExtra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<std::uint16_t, 30> kDistBase{1,   2,   3,   4,   5,   7,    9,    13,   17,   25,
                                                  33,  49,  65,  97,  129, 193,  257,  385,  513,  769,
                                                  1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<std::uint8_t, 30> kDistExtra{0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                  6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

// Deflate packs bits from the least significant end; Huffman codes go in most significant bit first.
class BitWriter {
public:
  explicit BitWriter(std::string& out) : out_(out) {}
  void bits(std::uint32_t value, int count) {
    acc_ |= value << fill_;
    fill_ += count;
    for (; fill_ >= 8; fill_ -= 8, acc_ >>= 8) out_.push_back(static_cast<char>(acc_ & 0xFF));
  }
  void code(std::uint32_t code, int length) {
    std::uint32_t reversed = 0;
    for (int i = 0; i < length; ++i) reversed |= ((code >> i) & 1u) << (length - 1 - i);
    bits(reversed, length);
  }
  void flush() {
    if (fill_ > 0) out_.push_back(static_cast<char>(acc_ & 0xFF));
    acc_ = 0;
    fill_ = 0;
  }

private:
  std::string& out_;
  std::uint32_t acc_ = 0;
  int fill_ = 0;
};

// The fixed literal/length code (RFC 1951, 3.2.6).
void symbol(BitWriter& w, unsigned sym) {
  if (sym < 144)
    w.code(0x30 + sym, 8);
  else if (sym < 256)
    w.code(0x190 + sym - 144, 9);
  else if (sym < 280)
    w.code(sym - 256, 7);
  else
    w.code(0xC0 + sym - 280, 8);
}

void match(BitWriter& w, std::size_t length, std::size_t distance) {
  std::size_t l = kLenBase.size() - 1;
  while (kLenBase[l] > length) --l;
  symbol(w, static_cast<unsigned>(257 + l));
  w.bits(static_cast<std::uint32_t>(length - kLenBase[l]), kLenExtra[l]);
  std::size_t d = kDistBase.size() - 1;
  while (kDistBase[d] > distance) --d;
  w.code(static_cast<std::uint32_t>(d), 5);  // fixed distance codes are their 5-bit index
  w.bits(static_cast<std::uint32_t>(distance - kDistBase[d]), kDistExtra[d]);
}

}  // namespace

std::uint32_t adler32(std::string_view data) {
  std::uint32_t a = 1, b = 0;
  for (const unsigned char x : data) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

std::string zlib_compress(std::string_view raw) {
  std::string z = "\x78\x01";  // deflate, 32 KiB window, no dictionary, "fastest" level
  BitWriter w(z);
  w.bits(1, 1);  // the final block
  w.bits(1, 2);  // fixed Huffman codes

  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  const std::size_t n = raw.size();
  constexpr std::uint32_t kMask = (1u << kHashBits) - 1;
  auto hash = [&](std::size_t i) {
    const std::uint32_t v = p[i] | (p[i + 1] << 8) | (p[i + 2] << 16);
    return (v * 2654435761u) >> (32 - kHashBits) & kMask;
  };
  // Absolute positions: head[h] is the latest position with hash h, prev[i % window] the one
  // before i with i's hash. A chain only ever steps back, and stops at the window's edge.
  std::vector<std::int64_t> head(std::size_t{1} << kHashBits, -1), prev(kWindow, -1);
  auto insert = [&](std::size_t i) {
    if (i + kMinMatch > n) return;
    const std::uint32_t h = hash(i);
    prev[i % kWindow] = head[h];
    head[h] = static_cast<std::int64_t>(i);
  };

  for (std::size_t i = 0; i < n;) {
    std::size_t best = 0, best_distance = 0;
    if (i + kMinMatch <= n) {
      const std::size_t limit = std::min(kMaxMatch, n - i);
      std::int64_t cand = head[hash(i)];
      for (int chain = 0; cand >= 0 && chain < kMaxChain; ++chain) {
        const auto c = static_cast<std::size_t>(cand);
        if (i - c > kWindow) break;
        std::size_t len = 0;
        while (len < limit && p[c + len] == p[i + len]) ++len;
        if (len > best) {
          best = len;
          best_distance = i - c;
          if (len == limit) break;
        }
        const std::int64_t next = prev[c % kWindow];
        if (next >= cand) break;
        cand = next;
      }
    }
    if (best >= kMinMatch) {
      match(w, best, best_distance);
      for (std::size_t j = 0; j < best; ++j) insert(i + j);
      i += best;
    } else {
      symbol(w, p[i]);
      insert(i);
      ++i;
    }
  }
  symbol(w, 256);  // end of block
  w.flush();
  const std::uint32_t a = adler32(raw);
  for (int s = 24; s >= 0; s -= 8) z.push_back(static_cast<char>((a >> s) & 0xFF));
  return z;
}

}  // namespace kd::kdctl
