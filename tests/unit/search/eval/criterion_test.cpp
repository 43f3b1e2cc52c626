#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "eval/error_criterion.hpp"
#include "eval/timing_stats.hpp"
#include "eval/vendor_baseline.hpp"

namespace kd::eval {
namespace {

GemmKey key_with_output(DType c, std::int64_t k_dim = 400) {
  GemmKey k;
  k.a = k.b = k.c = c;
  k.k = k_dim;
  return k;
}

TEST(ErrorCriterion, AllowanceIsFactorTimesVendorPlusFloorOfOutputRoundoff) {
  // k = 400: sqrt(k) = 20.
  const double u32 = std::ldexp(1.0, -24);
  const Tolerance tol = tolerance_for(key_with_output(DType::f32), 2.0);
  EXPECT_DOUBLE_EQ(tol.max_rel_floor, 4.0 * u32 + 40.0 * u32);
  const Allowance a = allowed_error({1e-6, 2e-7}, tol);
  EXPECT_DOUBLE_EQ(a.max_rel, 2e-6 + 44.0 * u32);
  EXPECT_DOUBLE_EQ(a.norm_rel, 4e-7 + 44.0 * u32);
  EXPECT_DOUBLE_EQ(tolerance_for(key_with_output(DType::bf16), 2.0).norm_rel_floor, 4.0 / 256.0 + 40.0 * u32);
  GemmKey half = key_with_output(DType::f16);
  half.compute = ComputeType::f16;
  EXPECT_DOUBLE_EQ(tolerance_for(half, 2.0).norm_rel_floor, 44.0 * std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(unit_roundoff(DType::f16), std::ldexp(1.0, -11));
}

TEST(ErrorCriterion, JudgesWithinPrecisionBelowClassAndWrong) {
  // k = 400: floor 44 * 2^-24 = 2.6e-6.
  const Allowance strict_f32 = allowed_error({2e-6, 4e-7}, tolerance_for(key_with_output(DType::f32), 2.0));
  EXPECT_EQ(judge_error({4e-6, 8e-7}, strict_f32), ErrorJudgement::within);  // a different sum order
  EXPECT_EQ(judge_error({7.5e-6, 8e-7}, strict_f32), ErrorJudgement::precision_below_class);
  EXPECT_EQ(judge_error({4e-6, 3.5e-6}, strict_f32), ErrorJudgement::precision_below_class);
  EXPECT_EQ(judge_error({1.5e-2, 3e-4}, strict_f32), ErrorJudgement::precision_below_class);  // TF32 products
  EXPECT_EQ(judge_error({0.9, 0.7}, strict_f32), ErrorJudgement::wrong);  // wrong transpose
  EXPECT_EQ(judge_error({5.0, 1e-3}, strict_f32), ErrorJudgement::wrong);  // one element far off
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(judge_error({nan, 0.0}, strict_f32), ErrorJudgement::wrong);
  EXPECT_EQ(judge_error({0.0, nan}, strict_f32), ErrorJudgement::wrong);
}

TEST(ErrorCriterion, RelativeFloorIsTheReferenceRms) {
  EXPECT_DOUBLE_EQ(relative_floor(400.0 * 100, 100), 20.0);  // rms 20
  EXPECT_GT(relative_floor(0.0, 100), 0.0);
  EXPECT_GT(relative_floor(1.0, 0), 0.0);
}

TEST(TimingStats, MedianAndQuartilesInterpolate) {
  const TimeStats t = summarize({5.0, 1.0, 4.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(t.median_us, 3.0);
  EXPECT_DOUBLE_EQ(t.p25_us, 2.0);
  EXPECT_DOUBLE_EQ(t.p75_us, 4.0);
  EXPECT_EQ(t.samples, 5);
  EXPECT_DOUBLE_EQ(summarize({1.0, 2.0}).median_us, 1.5);
  EXPECT_EQ(summarize({}).samples, 0);
}

TEST(TimingStats, FasterNeedsTheMarginBeyondTheSpread) {
  const TimeStats base{100.0, 99.0, 101.0, 50};
  EXPECT_EQ(compare_with_baseline({90.0, 89.0, 91.0, 50}, base, 0.03), BaselineComparison::faster);
  EXPECT_EQ(compare_with_baseline({98.0, 97.5, 98.5, 50}, base, 0.03),
            BaselineComparison::not_faster);  // < 3%
  // 5% faster, but the runs spread over 10 us: not convincingly faster.
  EXPECT_EQ(compare_with_baseline({95.0, 90.0, 100.0, 50}, {100.0, 95.0, 105.0, 50}, 0.03),
            BaselineComparison::not_faster);
  EXPECT_EQ(compare_with_baseline({110.0, 109.0, 111.0, 50}, base, 0.03), BaselineComparison::not_faster);
}

TEST(VendorBaseline, HalfBitsRoundToNearestEven) {
  EXPECT_EQ(half_bits(1.0f), 0x3C00);
  EXPECT_EQ(half_bits(-0.5f), 0xB800);
  EXPECT_EQ(half_bits(0.75f), 0x3A00);
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(half_bits(1e6f), 0x7C00);          // overflow to infinity
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie rounds to even
}

}  // namespace
}  // namespace kd::eval

// The evaluator's own kernels are compiled with NVRTC when it starts; a compile error there would
// only show on a GPU machine, so check it here.
#include "compile/nvrtc_compiler.hpp"
#include "eval/eval_kernels.hpp"

namespace kd::eval {
namespace {

TEST(EvalKernels, HelperSourceCompilesForSm90) {
  const search::CompileOutput out = search::compile_cuda(
      {.source = std::string(eval_kernels_source()), .name = "kd_eval_kernels.cu", .arch = "sm_90"});
  EXPECT_EQ(out.status, search::CompileStatus::ok) << out.log;
  EXPECT_FALSE(out.cubin.empty());
}

}  // namespace
}  // namespace kd::eval
