#include "png_chart.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>

#include "common/error.hpp"

namespace kd::kdctl {
namespace {

std::uint32_t crc32(const std::string& data) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t adler32(const std::string& data) {
  std::uint32_t a = 1, b = 0;
  for (const unsigned char x : data) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

void put32(std::string& s, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void chunk(std::string& png, const char* type, const std::string& body) {
  put32(png, static_cast<std::uint32_t>(body.size()));
  std::string typed(type, 4);
  typed += body;
  png += typed;
  put32(png, crc32(typed));
}

// zlib stream of stored (uncompressed) deflate blocks: valid PNG without a compressor.
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  for (std::size_t pos = 0; pos < raw.size() || pos == 0;) {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - pos);
    const bool last = pos + n >= raw.size();
    z.push_back(last ? 1 : 0);
    z.push_back(static_cast<char>(n & 0xFF));
    z.push_back(static_cast<char>(n >> 8));
    z.push_back(static_cast<char>(~n & 0xFF));
    z.push_back(static_cast<char>((~n >> 8) & 0xFF));
    z.append(raw, pos, n);
    pos += n;
    if (last) break;
  }
  put32(z, adler32(raw));
  return z;
}

}  // namespace

void write_bar_chart(const std::filesystem::path& file, const std::vector<ChartBar>& bars) {
  constexpr int kH = 300, kBar = 10, kGap = 8, kMargin = 20;
  const int w = kMargin * 2 + static_cast<int>(bars.size()) * (2 * kBar + kGap);
  double top = 2.0;
  for (const ChartBar& b : bars) top = std::max(top, b.speedup * 1.1);
  std::vector<std::array<unsigned char, 3>> px(static_cast<std::size_t>(w) * kH, {255, 255, 255});
  auto fill = [&](int x0, int x1, int y0, int y1, std::array<unsigned char, 3> c) {
    for (int y = std::max(0, y0); y < std::min(kH, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(w, x1); ++x) px[static_cast<std::size_t>(y) * w + x] = c;
  };
  const int base = kH - kMargin, height = kH - 2 * kMargin;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const int x = kMargin + static_cast<int>(i) * (2 * kBar + kGap);
    const int hs = static_cast<int>(height * std::min(bars[i].speedup, top) / top);
    const int hr = static_cast<int>(height * std::clamp(bars[i].roofline_frac, 0.0, 1.0));
    fill(x, x + kBar, base - hs, base, {31, 119, 180});
    fill(x + kBar, x + 2 * kBar, base - hr, base, {255, 127, 14});
  }
  const int one = base - static_cast<int>(height / top);
  fill(0, w, one, one + 1, {128, 128, 128});
  fill(0, w, base, base + 1, {0, 0, 0});

  std::string raw;
  for (int y = 0; y < kH; ++y) {
    raw.push_back(0);  // filter: none
    for (int x = 0; x < w; ++x)
      for (unsigned char c : px[static_cast<std::size_t>(y) * w + x]) raw.push_back(static_cast<char>(c));
  }
  std::string ihdr;
  put32(ihdr, static_cast<std::uint32_t>(w));
  put32(ihdr, kH);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  std::string png = "\x89PNG\r\n\x1a\n";
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", zlib_stored(raw));
  chunk(png, "IEND", "");
  std::ofstream out(file, std::ios::binary);
  out.write(png.data(), static_cast<std::streamsize>(png.size()));
  if (!out) throw Error(ErrorDomain::system, 0, "cannot write " + file.string());
}

}  // namespace kd::kdctl
