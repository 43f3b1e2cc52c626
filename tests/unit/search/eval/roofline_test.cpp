#include <gtest/gtest.h>

#include <fstream>
#include <variant>

#include "eval/roofline.hpp"
#include "support/parsed_key.hpp"
#include "support/temp_dir.hpp"

namespace kd::eval {
namespace {

using test::parsed_key;

TEST(Roofline, FloorIsTheSlowerOfBandwidthAndPeak) {
  // Decode GEMV: memory bound. A = 4096*4096 bf16 = 32 MiB read.
  const GemmKey gemv = parsed_key("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=1 k=4096 "
                             "lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1");
  Roofline r;
  r.bandwidth_bytes_per_s = 3e12;
  r.peak_flops_per_s["bf16/f32"] = 700e12;
  EXPECT_EQ(peak_class(gemv), "bf16/f32");
  const double bw_s = static_cast<double>(min_bytes(gemv)) / 3e12;
  EXPECT_GE(min_bytes(gemv), 4096ll * 4096 * 2);
  EXPECT_DOUBLE_EQ(roofline_floor_s(gemv, r, 1.0), bw_s);
  EXPECT_DOUBLE_EQ(roofline_floor_s(gemv, r), bw_s * kRooflineSlack);
  // Large square GEMM: compute bound.
  const GemmKey square = parsed_key("gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=8192 n=8192 k=8192 "
                               "lda=8192 ldb=8192 ldc=8192 batch=1 epilogue=none beta0=1");
  EXPECT_DOUBLE_EQ(flops(square), 2.0 * 8192.0 * 8192.0 * 8192.0);
  EXPECT_DOUBLE_EQ(roofline_floor_s(square, r, 1.0), flops(square) / 700e12);
  // No peak measured for the class: bandwidth only.
  Roofline bw_only = r;
  bw_only.peak_flops_per_s.clear();
  EXPECT_DOUBLE_EQ(roofline_floor_s(square, bw_only, 1.0),
                   static_cast<double>(min_bytes(square)) / 3e12);
}

TEST(Roofline, PeakClassFollowsInputTypeAndPrecision) {
  EXPECT_EQ(peak_class(parsed_key("gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 "
                             "batch=1 epilogue=none beta0=1 precision=tf32")),
            "f32/tf32");
  EXPECT_EQ(peak_class(parsed_key("gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 "
                             "batch=1 epilogue=none beta0=1")),
            "f16/f16");
}

TEST(Roofline, StoredOncePerGpuAndReused) {
  test::TempDir dir;
  Roofline r;
  r.gpu = "NVIDIA H100 80GB HBM3 sm_90 132sm";
  r.bandwidth_bytes_per_s = 2.9e12;
  r.peak_flops_per_s = {{"bf16/f32", 6.5e14}, {"f32/f32", 5e13}};
  EXPECT_FALSE(load_roofline(dir.path(), r.gpu).has_value());
  save_roofline(dir.path() / "cache", r);
  EXPECT_EQ(roofline_file_name(r.gpu), "roofline-NVIDIA_H100_80GB_HBM3_sm_90_132sm.json");
  const auto back = load_roofline(dir.path() / "cache", r.gpu);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(load_roofline(dir.path() / "cache", "another GPU").has_value());
}

TEST(Roofline, DamagedFileIsRemeasuredNotFatal) {
  test::TempDir dir;
  const std::string gpu = "GPU X";
  std::ofstream(dir.path() / roofline_file_name(gpu)) << "{ not json";
  EXPECT_FALSE(load_roofline(dir.path(), gpu).has_value());
  std::ofstream(dir.path() / roofline_file_name(gpu)) << R"({"gpu":"GPU X","bandwidth_bytes_per_s":0,"peak_flops_per_s":{}})";
  EXPECT_FALSE(load_roofline(dir.path(), gpu).has_value());  // zero bandwidth: not a measurement
}

TEST(Roofline, FileOfOlderRulesIsRemeasured) {
  test::TempDir dir;
  const std::string gpu = "GPU X";
  // Version 1 (no field) held strict f32 to a SIMT SGEMM's peak, which 3xTF32 kernels beat.
  std::ofstream(dir.path() / roofline_file_name(gpu))
      << R"({"gpu":"GPU X","bandwidth_bytes_per_s":4e12,"peak_flops_per_s":{"f32/f32":5e13}})";
  EXPECT_FALSE(load_roofline(dir.path(), gpu).has_value());
  // Version 2 held it to 3xTF32's, which f16-split kernels (three f16 products) beat.
  std::ofstream(dir.path() / roofline_file_name(gpu))
      << R"({"version":2,"gpu":"GPU X","bandwidth_bytes_per_s":4e12,"peak_flops_per_s":{"f32/f32":1.6e14}})";
  EXPECT_FALSE(load_roofline(dir.path(), gpu).has_value());
  // Version 3 held the TF32 class to cuBLAS's TF32 rate, which one product of scaled f16 splits beats.
  std::ofstream(dir.path() / roofline_file_name(gpu))
      << R"({"version":3,"gpu":"GPU X","bandwidth_bytes_per_s":4e12,"peak_flops_per_s":{"f32/f32":2.6e14}})";
  EXPECT_FALSE(load_roofline(dir.path(), gpu).has_value());
  std::ofstream(dir.path() / roofline_file_name(gpu))
      << R"({"version":4,"gpu":"GPU X","bandwidth_bytes_per_s":4e12,"peak_flops_per_s":{"f32/f32":2.6e14}})";
  EXPECT_TRUE(load_roofline(dir.path(), gpu).has_value());
}

}  // namespace
}  // namespace kd::eval
