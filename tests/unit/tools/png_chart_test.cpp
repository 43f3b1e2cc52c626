// kdctl's zlib compressor and PNG chart, checked by an independent reader: a minimal inflater
// (stored and fixed-Huffman blocks, RFC 1951) and a PNG chunk walker with CRC checks.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "deflate.hpp"
#include "png_chart.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

// Inflates a zlib stream whose blocks are stored or use the fixed codes; nullopt on any error
// (bad header, dynamic block, distance before the start, truncation, Adler-32 mismatch).
std::optional<std::string> inflate_fixed(const std::string& z) {
  if (z.size() < 6 || (static_cast<unsigned char>(z[0]) & 0x0F) != 8 ||
      ((static_cast<unsigned char>(z[0]) << 8) | static_cast<unsigned char>(z[1])) % 31 != 0)
    return std::nullopt;
  std::size_t bitpos = 16;
  const std::size_t nbits = (z.size() - 4) * 8;
  bool ok = true;
  auto bit = [&]() -> unsigned {
    if (bitpos >= nbits) {
      ok = false;
      return 0;
    }
    const unsigned b = (static_cast<unsigned char>(z[bitpos / 8]) >> (bitpos % 8)) & 1u;
    ++bitpos;
    return b;
  };
  auto bits = [&](int count) {
    unsigned v = 0;
    for (int i = 0; i < count; ++i) v |= bit() << i;
    return v;
  };
  auto huff = [&](int count) {  // a Huffman code's bits arrive most significant first
    unsigned v = 0;
    for (int i = 0; i < count; ++i) v = (v << 1) | bit();
    return v;
  };
  // Fixed literal/length decoding: read 7 bits, then extend to 8 or 9 by the code ranges.
  auto literal = [&]() -> unsigned {
    unsigned c = huff(7);
    if (c <= 0x17) return 256 + c;
    c = (c << 1) | bit();
    if (c >= 0x30 && c <= 0xBF) return c - 0x30;
    if (c >= 0xC0 && c <= 0xC7) return 280 + c - 0xC0;
    c = (c << 1) | bit();
    return 144 + c - 0x190;
  };
  static constexpr std::array<unsigned, 29> kLen{3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static constexpr std::array<int, 29> kLenX{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                             2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  std::string out;
  for (bool last = false; !last && ok;) {
    last = bit() != 0;
    const unsigned type = bits(2);
    if (type == 0) {
      bitpos = (bitpos + 7) / 8 * 8;
      const unsigned len = bits(16), nlen = bits(16);
      if ((len ^ 0xFFFFu) != nlen || bitpos / 8 + len > z.size() - 4) return std::nullopt;
      out.append(z, bitpos / 8, len);
      bitpos += 8 * static_cast<std::size_t>(len);
    } else if (type == 1) {
      for (;;) {
        const unsigned sym = literal();
        if (!ok || sym > 285) return std::nullopt;
        if (sym < 256) {
          out.push_back(static_cast<char>(sym));
          continue;
        }
        if (sym == 256) break;
        const unsigned len = kLen[sym - 257] + bits(kLenX[sym - 257]);
        const unsigned dcode = huff(5);
        if (dcode >= 30) return std::nullopt;
        unsigned dist = 1, extra = 0;
        for (unsigned d = 0; d < dcode; ++d) {  // the distance bases, built from their extra bits
          extra = d < 4 ? 0 : d / 2 - 1;
          dist += 1u << extra;
        }
        dist += bits(dcode < 4 ? 0 : static_cast<int>(dcode / 2 - 1));
        if (dist > out.size()) return std::nullopt;
        for (unsigned i = 0; i < len; ++i) out.push_back(out[out.size() - dist]);
      }
    } else {
      return std::nullopt;
    }
  }
  if (!ok) return std::nullopt;
  std::uint32_t stored = 0;
  for (std::size_t i = z.size() - 4; i < z.size(); ++i) stored = (stored << 8) | static_cast<unsigned char>(z[i]);
  if (stored != kdctl::adler32(out)) return std::nullopt;
  return out;
}

void round_trip(const std::string& raw) {
  const std::string z = kdctl::zlib_compress(raw);
  const std::optional<std::string> back = inflate_fixed(z);
  ASSERT_TRUE(back.has_value()) << "undecodable stream for " << raw.size() << " bytes";
  EXPECT_EQ(*back, raw);
}

TEST(Deflate, RoundTripsEmptyShortRandomAndRepetitiveInput) {
  round_trip("");
  round_trip("a");
  round_trip("abcabcabcabcabcabc");
  std::mt19937 rng(7);
  std::string noise(100000, '\0');
  for (char& c : noise) c = static_cast<char>(rng() & 0xFF);
  round_trip(noise);
  // Every length code and long distances: runs of varied length separated by noise, repeated
  // from more than 32 KiB back (beyond the window, so they must be coded again).
  std::string mixed;
  for (int len = 1; len < 600; len += 7) {
    mixed.append(static_cast<std::size_t>(len), static_cast<char>('a' + len % 26));
    mixed.append(noise, static_cast<std::size_t>(len) * 13 % 5000, 40);
  }
  mixed += mixed;
  mixed.append(noise, 0, 40000);
  mixed.append(mixed, 0, 70000);
  round_trip(mixed);
}

TEST(Deflate, ShrinksRunsOfOneByteAboutAHundredfold) {
  const std::string zeros(1 << 20, '\0');
  const std::string z = kdctl::zlib_compress(zeros);
  EXPECT_LT(z.size(), zeros.size() / 100) << z.size();
  EXPECT_EQ(inflate_fixed(z), zeros);
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = at; i < at + 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

std::uint32_t crc32(const std::string& data) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

TEST(PngChart, IsAValidCompressedPngWhosePixelsDecode) {
  TempDir dir;
  std::vector<kdctl::ChartBar> bars;
  for (int i = 0; i < 41; ++i)
    bars.push_back({"bf16 T 4096x" + std::to_string(i) + "x4096", 0.8 + 0.05 * i, i % 3 != 0, 0.5 + 0.01 * i, 0.6});
  const auto file = dir.path() / "chart.png";
  kdctl::write_bar_chart(file, bars, "NVIDIA H200");
  std::ifstream in(file, std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(png.size(), 8u);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  std::uint32_t width = 0, height = 0;
  std::string idat;
  std::vector<std::string> types;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t len = be32(png, at);
    ASSERT_LE(at + 12 + len, png.size());
    const std::string typed = png.substr(at + 4, 4 + len);
    EXPECT_EQ(be32(png, at + 8 + len), crc32(typed)) << typed.substr(0, 4);
    types.push_back(typed.substr(0, 4));
    if (types.back() == "IHDR") {
      width = be32(typed, 4);
      height = be32(typed, 8);
      EXPECT_EQ(typed.substr(12, 5), std::string("\x08\x02\x00\x00\x00", 5));  // 8-bit RGB
    }
    if (types.back() == "IDAT") idat += typed.substr(4);
    at += 12 + len;
  }
  ASSERT_EQ(types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
  ASSERT_GT(width, 0u);
  ASSERT_GT(height, 41u * 20);

  const std::optional<std::string> raw = inflate_fixed(idat);
  ASSERT_TRUE(raw.has_value());
  const std::size_t stride = 3 * static_cast<std::size_t>(width);
  ASSERT_EQ(raw->size(), static_cast<std::size_t>(height) * (1 + stride));
  // Undo the filters and count what the chart must contain: a white background, the blue of tuned
  // bars and the orange of the roofline bars.
  std::vector<unsigned char> prev(stride, 0), row(stride);
  std::size_t white = 0, blue = 0, orange = 0;
  for (std::uint32_t y = 0; y < height; ++y) {
    const auto* src = reinterpret_cast<const unsigned char*>(raw->data()) + y * (1 + stride);
    ASSERT_LE(src[0], 2) << "row " << y << " uses a filter the writer never picks";
    for (std::size_t i = 0; i < stride; ++i) {
      const unsigned left = i >= 3 ? row[i - 3] : 0;
      row[i] = static_cast<unsigned char>(src[1 + i] + (src[0] == 1 ? left : src[0] == 2 ? prev[i] : 0));
    }
    for (std::size_t x = 0; x < width; ++x) {
      const unsigned char* px = &row[3 * x];
      white += px[0] == 255 && px[1] == 255 && px[2] == 255;
      blue += px[0] == 31 && px[1] == 119 && px[2] == 180;
      orange += px[0] == 255 && px[1] == 127 && px[2] == 14;
    }
    prev = row;
  }
  EXPECT_GT(white, static_cast<std::size_t>(width) * height / 2);
  EXPECT_GT(blue, 1000u);
  EXPECT_GT(orange, 1000u);
  // Compressed: the stored-block writer this replaced wrote every pixel (about 3 bytes each).
  EXPECT_LT(png.size(), static_cast<std::size_t>(width) * height * 3 / 20) << png.size();
}

}  // namespace
}  // namespace kd::test
