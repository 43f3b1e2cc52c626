#include "png_chart.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace kd::kdctl {
namespace {

// A 5x7 bitmap font for the characters kdctl's labels use.
// Each glyph is seven rows of five columns, most significant of the five bits on the left.
struct Glyph {
  char c;
  std::array<std::uint8_t, 7> rows;
};
constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}}, {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}}, {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}}, {'f', {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}}, {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}}, {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}}, {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}}, {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}}, {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01}}, {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}}, {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}}, {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}}, {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}},
    {'y', {0x00, 0x11, 0x11, 0x0F, 0x01, 0x11, 0x0E}}, {'z', {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}}, {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}}, {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}}, {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}}, {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}}, {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'A', {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}}, {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}}, {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}}, {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}}, {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
};

const Glyph* glyph(char c) {
  for (const Glyph& g : kFont)
    if (g.c == c) return &g;
  return nullptr;  // drawn as a space
}

using Rgb = std::array<unsigned char, 3>;
static_assert(sizeof(Rgb) == 3, "a canvas row is 3 * width bytes, as libpng reads it");
constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrey{150, 150, 150}, kLight{215, 215, 215},
    kBlue{31, 119, 180}, kOrange{255, 127, 14}, kText{40, 40, 40};
constexpr int kScale = 2;                 // font pixels per bitmap pixel
constexpr int kCharW = 6 * kScale;        // 5 columns and one of spacing
constexpr int kCharH = 7 * kScale;

class Canvas {
public:
  Canvas(int w, int h) : w_(w), h_(h), px_(static_cast<std::size_t>(w) * h, kWhite) {}
  int width() const { return w_; }
  int height() const { return h_; }
  void fill(int x0, int x1, int y0, int y1, Rgb c) {
    for (int y = std::max(0, y0); y < std::min(h_, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(w_, x1); ++x) px_[static_cast<std::size_t>(y) * w_ + x] = c;
  }
  // Text with its top-left corner at (x, y); returns the x after the last character.
  int text(int x, int y, const std::string& s, Rgb c = kText) {
    for (const char ch : s) {
      if (const Glyph* g = glyph(ch))
        for (int r = 0; r < 7; ++r)
          for (int col = 0; col < 5; ++col)
            if (g->rows[static_cast<std::size_t>(r)] & (0x10 >> col))
              fill(x + col * kScale, x + (col + 1) * kScale, y + r * kScale, y + (r + 1) * kScale, c);
      x += kCharW;
    }
    return x;
  }
  // The pixels, row by row, three bytes (R, G, B) each.
  const unsigned char* rgb() const { return px_.front().data(); }

private:
  int w_, h_;
  std::vector<Rgb> px_;
};

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

void write_bar_chart(const std::filesystem::path& file, const std::vector<ChartBar>& bars,
                     const std::string& title, const std::string& baseline) {
  constexpr int kPad = 16, kRow = 24, kBarH = 14, kSpeedW = 420, kRoofW = 300, kGapW = 40;
  std::size_t label_chars = 10;
  for (const ChartBar& b : bars) label_chars = std::max(label_chars, b.label.size());
  const int label_w = static_cast<int>(label_chars) * kCharW + kPad;
  const int speed_x = kPad + label_w, roof_x = speed_x + kSpeedW + kGapW + 6 * kCharW;
  // Wide enough for the bars and for the first legend line (its text and three colour swatches).
  const std::string legend_text = "speedup over " + baseline + ", serving regime: tuned kernel  " + baseline +
                                  " kept  isolated regime";
  const int legend_w = 2 * kPad + static_cast<int>(legend_text.size()) * kCharW + 3 * (3 * kScale * 4 + 6);
  const int w = std::max(roof_x + kRoofW + 3 * kCharW + kPad, legend_w);
  const int header = kPad + 4 * (kCharH + 8) + 8;  // title, two legend lines, tick labels
  const int h = header + static_cast<int>(bars.size()) * kRow + kPad + kCharH;
  Canvas cv(w, h);

  double top = 2.0;
  for (const ChartBar& b : bars) top = std::max({top, b.speedup * 1.1, b.speedup_isolated * 1.1});
  const double tick = top > 4 ? 1.0 : 0.5;
  auto speed_px = [&](double v) { return static_cast<int>(kSpeedW * std::clamp(v, 0.0, top) / top); };

  int y = kPad;
  cv.text(kPad, y, title, kBlack);
  y += kCharH + 8;
  int x = cv.text(kPad, y, "speedup over " + baseline + ", serving regime: ");
  cv.fill(x, x + 3 * kScale * 4, y, y + kCharH, kBlue);
  x = cv.text(x + 3 * kScale * 4 + 6, y, "tuned kernel  ");
  cv.fill(x, x + 3 * kScale * 4, y, y + kCharH, kLight);
  x = cv.text(x + 3 * kScale * 4 + 6, y, baseline + " kept  ");
  cv.fill(x, x + 3 * kScale * 4, y + kCharH / 2, y + kCharH, kGrey);
  cv.text(x + 3 * kScale * 4 + 6, y, "isolated regime");
  y += kCharH + 8;
  x = cv.text(kPad, y, "fraction of a streaming read's bandwidth: ");
  cv.fill(x, x + 3 * kScale * 4, y, y + kCharH, kOrange);
  x = cv.text(x + 3 * kScale * 4 + 6, y, "what runs  ");
  cv.fill(x, x + 3 * kScale * 4, y, y + kCharH, kGrey);
  cv.text(x + 3 * kScale * 4 + 6, y, baseline);
  y += kCharH + 8;

  // Axes: ticks and their labels above the rows, grid lines through them.
  const int rows_top = header, rows_bottom = header + static_cast<int>(bars.size()) * kRow;
  for (double t = 0; t <= top + 1e-9; t += tick) {
    const int gx = speed_x + speed_px(t);
    cv.fill(gx, gx + 1, rows_top - 4, rows_bottom, t == 1.0 ? kBlack : kLight);
    cv.text(gx - kCharW, rows_top - kCharH - 6, fixed(t, 1) + "x");
  }
  for (int pct = 0; pct <= 100; pct += 25) {
    const int gx = roof_x + kRoofW * pct / 100;
    cv.fill(gx, gx + 1, rows_top - 4, rows_bottom, pct == 100 ? kBlack : kLight);
    cv.text(gx - kCharW, rows_top - kCharH - 6, std::to_string(pct) + "%");
  }

  for (std::size_t i = 0; i < bars.size(); ++i) {
    const ChartBar& b = bars[i];
    const int ry = rows_top + static_cast<int>(i) * kRow + (kRow - kBarH) / 2;
    cv.text(kPad, ry, b.label, kBlack);
    if (b.speedup <= 0) {
      cv.text(speed_x + 4, ry, "not measured", kGrey);
      continue;
    }
    const int sw = speed_px(b.speedup);
    const int half = kBarH / 2;
    cv.fill(speed_x, speed_x + sw, ry, b.speedup_isolated > 0 ? ry + kBarH - 4 : ry + kBarH, b.tuned ? kBlue : kLight);
    if (b.speedup_isolated > 0) cv.fill(speed_x, speed_x + speed_px(b.speedup_isolated), ry + kBarH - 3, ry + kBarH, kGrey);
    cv.text(speed_x + std::max(sw, speed_px(b.speedup_isolated)) + 4, ry, fixed(b.speedup, 2) + "x");
    if (b.stream_frac > 0)
      cv.fill(roof_x, roof_x + static_cast<int>(kRoofW * std::clamp(b.stream_frac, 0.0, 1.0)), ry, ry + half, kOrange);
    if (b.stream_cublas > 0)
      cv.fill(roof_x, roof_x + static_cast<int>(kRoofW * std::clamp(b.stream_cublas, 0.0, 1.0)), ry + half, ry + kBarH,
              kGrey);
  }
  cv.fill(speed_x, speed_x + kSpeedW, rows_bottom, rows_bottom + 1, kBlack);
  cv.fill(roof_x, roof_x + kRoofW, rows_bottom, rows_bottom + 1, kBlack);

  // 8-bit RGB through libpng (its filters and zlib's deflate): first the size, then the bytes.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(cv.width());
  image.height = static_cast<png_uint_32>(cv.height());
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  std::string png;
  if (png_image_write_get_memory_size(image, size, 0, cv.rgb(), 0, nullptr)) {
    png.resize(size);
    if (!png_image_write_to_memory(&image, png.data(), &size, 0, cv.rgb(), 0, nullptr)) size = 0;
    png.resize(size);
  }
  if (png.empty())
    throw Error(ErrorDomain::system, 0, "cannot encode the chart as PNG: " + std::string(image.message));
  std::ofstream out(file, std::ios::binary);
  out.write(png.data(), static_cast<std::streamsize>(png.size()));
  if (!out) throw Error(ErrorDomain::system, 0, "cannot write " + file.string());
}

}  // namespace kd::kdctl
