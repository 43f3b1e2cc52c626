// The rules of what a GEMM call may be keyed as (key/gemm_rules.hpp): every shape they accept
// prints to a line the parser reads back, and each problem is named.
#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "key/gemm_key.hpp"
#include "key/gemm_rules.hpp"

namespace kd {
namespace {

GemmShape valid_shape() {
  GemmShape s;
  s.a = s.b = s.c = DType::bf16;
  s.ta = Transpose::T;
  s.m = 4096;
  s.n = 16;
  s.k = 4096;
  s.lda = s.ldb = s.ldc = 4096;
  s.beta_zero = true;
  return s;
}

// An accepted shape is looked up, reported and recorded as a line: it must parse back to itself.
TEST(GemmRules, AcceptedShapesRoundTripThroughTheParser) {
  std::vector<GemmShape> shapes;
  shapes.push_back(valid_shape());
  GemmShape batched = valid_shape();
  batched.batch = 4;
  batched.stride_a = 0;  // broadcast A: allowed
  batched.stride_b = 4096 * 16;
  batched.stride_c = 4096 * 16;
  shapes.push_back(batched);
  GemmShape half = valid_shape();
  half.a = half.b = half.c = DType::f16;
  half.compute = ComputeType::f16;
  half.precision = PrecisionClass::f16;
  shapes.push_back(half);
  GemmShape widened = valid_shape();
  widened.c = DType::f32;
  shapes.push_back(widened);
  GemmShape tf32 = valid_shape();
  tf32.a = tf32.b = tf32.c = DType::f32;
  tf32.precision = PrecisionClass::tf32;
  tf32.epilogue = Epilogue::bias;
  shapes.push_back(tf32);
  for (const GemmShape& s : shapes) {
    ASSERT_FALSE(shape_problem(s)) << shape_line(s);
    const auto parsed = parse_key(shape_line(s));
    ASSERT_TRUE(std::holds_alternative<GemmKey>(parsed)) << shape_line(s);
    EXPECT_EQ(static_cast<const GemmShape&>(std::get<GemmKey>(parsed)), s) << shape_line(s);
  }
}

TEST(GemmRules, NamesWhatTheKeyCannotHold) {
  const auto with = [](auto change) {
    GemmShape s = valid_shape();
    change(s);
    return shape_problem(s);
  };
  EXPECT_EQ(with([](GemmShape& s) { s.b = DType::f16; }), ShapeProblem::data_type);
  EXPECT_EQ(with([](GemmShape& s) { s.c = DType::f16; }), ShapeProblem::data_type);
  EXPECT_EQ(with([](GemmShape& s) {
              s.a = s.b = DType::f32;
              s.c = DType::bf16;  // 16-bit output of f32 inputs: not a cuBLAS combination we key
            }),
            ShapeProblem::data_type);
  EXPECT_EQ(with([](GemmShape& s) { s.compute = ComputeType::f16; }), ShapeProblem::compute_type);
  EXPECT_EQ(with([](GemmShape& s) { s.k = 0; }), ShapeProblem::shape);
  EXPECT_EQ(with([](GemmShape& s) { s.batch = 0; }), ShapeProblem::shape);
  EXPECT_EQ(with([](GemmShape& s) { s.lda = 100; }), ShapeProblem::shape);  // ta=T needs lda >= k
  EXPECT_EQ(with([](GemmShape& s) { s.ldc = 4095; }), ShapeProblem::shape);
  EXPECT_EQ(with([](GemmShape& s) {
              s.batch = 2;
              s.stride_b = -1;
              s.stride_c = 4096 * 16;
            }),
            ShapeProblem::batch_layout);
  EXPECT_EQ(with([](GemmShape& s) {
              s.batch = 2;
              s.stride_c = 4096 * 15;  // the two outputs overlap
            }),
            ShapeProblem::batch_layout);
  EXPECT_EQ(with([](GemmShape& s) {
              s.batch = 2;
              s.ldc = std::int64_t{1} << 62;
              s.stride_c = std::int64_t{1} << 62;  // ldc * (n - 1) overflows: not keyed
            }),
            ShapeProblem::batch_layout);
  EXPECT_EQ(with([](GemmShape& s) {
              s.batch = 2;
              s.stride_c = 4096 * 16;
              s.epilogue = Epilogue::bias;
            }),
            ShapeProblem::batch_layout);
}

}  // namespace
}  // namespace kd
