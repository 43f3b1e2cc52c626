#include "key/gemm_rules.hpp"

namespace kd {
namespace {

// Elements from the first to one past the last of one batch entry's C, or nullopt on overflow.
std::optional<std::int64_t> c_extent(const GemmShape& s) noexcept {
  std::int64_t extent = 0;
  if (__builtin_mul_overflow(s.ldc, s.n - 1, &extent) || __builtin_add_overflow(extent, s.m, &extent))
    return std::nullopt;
  return extent;
}

}  // namespace

std::optional<ShapeProblem> shape_problem(const GemmShape& s) noexcept {
  if (s.a != s.b || !c_type_allowed(s.a, s.c)) return ShapeProblem::data_type;
  if (!compute_allowed(s.a, s.c, s.compute)) return ShapeProblem::compute_type;
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1) return ShapeProblem::shape;
  if (s.lda < min_lda(s) || s.ldb < min_ldb(s) || s.ldc < s.m) return ShapeProblem::shape;
  if (s.batch > 1) {
    if (s.stride_a < 0 || s.stride_b < 0) return ShapeProblem::batch_layout;
    const std::optional<std::int64_t> extent = c_extent(s);
    if (!extent || s.stride_c < *extent) return ShapeProblem::batch_layout;
    // The bias vector is one per call; a batch would need one per entry.
    if (s.epilogue == Epilogue::bias) return ShapeProblem::batch_layout;
  }
  return std::nullopt;
}

}  // namespace kd
