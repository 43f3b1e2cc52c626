// The one form a row operator's key takes (issue 33): normalization and softmax over the last
// dimension of a contiguous tensor, viewed as `rows` rows of `cols` elements (rows = the product of
// the leading dimensions, cols = the product of the normalized trailing ones). It is to row operators
// what GemmShape (key/gemm_shape.hpp) is to GEMMs: a plain image without padding, printed and parsed
// by key/row_key.hpp, compared and hashed by its bytes.
//
//   rmsnorm   y = x * rsqrt(mean(x^2) + eps) [* weight]
//   layernorm y = (x - mean(x)) * rsqrt(var(x) + eps) [* weight] [+ bias]   (biased variance)
//   softmax   y = exp(x - max(x)) / sum(exp(x - max(x)))
//
// x, y, weight and bias share `dtype`; the arithmetic is f32 whatever the dtype (what the
// frameworks' kernels do), so there is one precision class per dtype. weight and bias hold `cols`
// elements each, shared by every row; softmax has neither. eps is a call argument, not a key part.
#pragma once

#include <cstdint>
#include <type_traits>

#include "key/gemm_shape.hpp"

namespace kd {

// The operators besides gemm. Adding one: a row here and in key/key_names.hpp (kRowOp), its
// reference and baseline in the evaluator (eval/row_problem.cpp), its builtin kernel
// (search/src/builtin/kernels/row_reduce.cu); ARCHITECTURE.md, "Adding an operator", lists the steps.
enum class RowOp : std::uint8_t { rmsnorm, layernorm, softmax };

struct RowShape {
  std::int64_t rows = 0;  // >= 1
  std::int64_t cols = 0;  // >= 1: the elements each row is normalized over
  DType dtype = DType::f32;
  RowOp op = RowOp::rmsnorm;
  bool weight = false;  // rmsnorm and layernorm: y is scaled by weight[col]
  bool bias = false;    // layernorm only: bias[col] is added
  std::uint8_t reserved[4] = {};  // explicit padding, always zero (hashed and compared as bytes)

  bool operator==(const RowShape&) const = default;
};
static_assert(sizeof(RowShape) == 24, "RowShape must have no implicit padding");
static_assert(std::has_unique_object_representations_v<RowShape>);
static_assert(std::is_trivially_copyable_v<RowShape>);

}  // namespace kd
