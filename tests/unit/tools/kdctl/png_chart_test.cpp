// kdctl's PNG chart, read back by libpng: a valid, compressed 8-bit RGB image whose pixels show the
// chart's background, tuned bars and bandwidth bars.
#include <gtest/gtest.h>

#include <png.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "png_chart.hpp"
#include "support/temp_dir.hpp"
#include "support/text_file.hpp"

namespace kd::test {
namespace {

struct Decoded {
  std::uint32_t width = 0, height = 0;
  std::vector<unsigned char> rgb;  // 3 bytes a pixel, rows top to bottom
  std::string error;               // libpng's message when it could not decode
};

Decoded decode_rgb(const std::string& png) {
  Decoded out;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, png.data(), png.size())) {
    out.error = image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGB;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    out.error = image.message;
    png_image_free(&image);
    return out;
  }
  out.width = image.width;
  out.height = image.height;
  return out;
}

TEST(PngChart, IsAValidCompressedPngWhosePixelsDecode) {
  TempDir dir;
  std::vector<kdctl::ChartBar> bars;
  for (int i = 0; i < 41; ++i)
    bars.push_back({"bf16 T 4096x" + std::to_string(i) + "x4096", 0.8 + 0.05 * i, i % 3 != 0, 0.5 + 0.01 * i, 0.6});
  const auto file = dir.path() / "chart.png";
  kdctl::write_bar_chart(file, bars, "NVIDIA H200");
  const std::string png = read_text(file);
  ASSERT_GT(png.size(), 8u);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(png[24], 8) << "bit depth";
  EXPECT_EQ(png[25], 2) << "colour type: RGB";

  const Decoded d = decode_rgb(png);
  ASSERT_TRUE(d.error.empty()) << d.error;
  ASSERT_GT(d.width, 0u);
  ASSERT_GT(d.height, 41u * 20);
  // What the chart must contain: a white background, the blue of tuned bars, the orange of the
  // bandwidth bars and the thin grey bars of the isolated regime's speedups (none here: not measured).
  std::size_t white = 0, blue = 0, orange = 0;
  for (std::size_t px = 0; px < d.rgb.size(); px += 3) {
    const unsigned char* c = &d.rgb[px];
    white += c[0] == 255 && c[1] == 255 && c[2] == 255;
    blue += c[0] == 31 && c[1] == 119 && c[2] == 180;
    orange += c[0] == 255 && c[1] == 127 && c[2] == 14;
  }
  EXPECT_GT(white, static_cast<std::size_t>(d.width) * d.height / 2);
  EXPECT_GT(blue, 1000u);
  EXPECT_GT(orange, 1000u);
  // Compressed: an uncompressed image would take about 3 bytes a pixel.
  EXPECT_LT(png.size(), static_cast<std::size_t>(d.width) * d.height * 3 / 20) << png.size();
}

TEST(PngChart, DrawsTheIsolatedRegimeUnderTheServingBar) {
  TempDir dir;
  const auto with = dir.path() / "with.png", without = dir.path() / "without.png";
  std::vector<kdctl::ChartBar> bars = {{"f32 T 4096x16x4096", 1.5, true, 0.7, 0.4, 0}};
  kdctl::write_bar_chart(without, bars, "NVIDIA H100");
  bars[0].speedup_isolated = 1.2;
  kdctl::write_bar_chart(with, bars, "NVIDIA H100");
  const Decoded a = decode_rgb(read_text(without)), b = decode_rgb(read_text(with));
  ASSERT_TRUE(a.error.empty() && b.error.empty()) << a.error << b.error;
  ASSERT_EQ(a.width, b.width);
  ASSERT_EQ(a.height, b.height);
  auto count = [](const Decoded& d, unsigned char r, unsigned char g, unsigned char bl) {
    std::size_t n = 0;
    for (std::size_t px = 0; px < d.rgb.size(); px += 3) n += d.rgb[px] == r && d.rgb[px + 1] == g && d.rgb[px + 2] == bl;
    return n;
  };
  // The serving bar gives up its bottom rows to the grey isolated bar.
  EXPECT_GT(count(b, 150, 150, 150), count(a, 150, 150, 150));
  EXPECT_LT(count(b, 31, 119, 180), count(a, 31, 119, 180));
}

TEST(PngChart, AnUnwritablePathIsAnError) {
  TempDir dir;
  EXPECT_THROW(kdctl::write_bar_chart(dir.path() / "no-such-dir" / "chart.png", {}, "x"), kd::Error);
}

// The legend names what the speedups are over (cuBLAS; a row operator's framework kernel, issue 33),
// and the chart is wide enough for it.
TEST(PngChart, IsWideEnoughForTheBaselinesName) {
  TempDir dir;
  const std::vector<kdctl::ChartBar> bars = {{"layernorm f32 4096x1024", 1.2, true, 0.7, 0.6, 1.1}};
  const auto cublas = dir.path() / "cublas.png", framework = dir.path() / "framework.png";
  kdctl::write_bar_chart(cublas, bars, "NVIDIA H100", "cuBLAS");
  kdctl::write_bar_chart(framework, bars, "NVIDIA H100", "the framework kernel");
  const Decoded a = decode_rgb(read_text(cublas)), b = decode_rgb(read_text(framework));
  ASSERT_TRUE(a.error.empty() && b.error.empty()) << a.error << b.error;
  EXPECT_EQ(a.height, b.height);
  // The first legend line, in characters 12 pixels wide, fits; the bars alone set cuBLAS's width.
  const std::string legend = "speedup over the framework kernel, serving regime: tuned kernel  the framework kernel "
                             "kept  isolated regime";
  EXPECT_GT(b.width, a.width);
  EXPECT_GE(b.width, legend.size() * 12);
}

}  // namespace
}  // namespace kd::test
