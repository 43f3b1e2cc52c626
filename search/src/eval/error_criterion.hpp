// The gate's error criterion (design.md, "The validation gate"): a candidate's error against the
// fp64 reference must be at most `factor` times the vendor library's own error on the same inputs,
// plus a small absolute floor. Pure arithmetic, so it is unit-tested without a GPU.
#pragma once

#include "eval/verdict.hpp"
#include "key/gemm_key.hpp"

namespace kd::eval {

// Unit roundoff of a storage type: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16).
double unit_roundoff(DType t);

struct Tolerance {
  double factor = 2.0;          // times the vendor's error
  double max_rel_floor = 0.0;   // absolute floors added to each allowance
  double norm_rel_floor = 0.0;
};

// factor as given; each floor is 4 units of roundoff of the output type plus 2 sqrt(k) units of
// the accumulator's (2^-24 for compute f32, 2^-11 for compute f16): the spread any correct
// summation order shows, so that a plain sequential sum is not failed against a vendor kernel that
// happens to split k. A lower precision class errs by orders of magnitude more (TF32 products on
// an f32 key: ~2^-11 against ~2^-24 sqrt(k)).
Tolerance tolerance_for(const GemmKey& key, double factor);

struct Allowance {
  double max_rel = 0.0;
  double norm_rel = 0.0;
};
Allowance allowed_error(const ErrorFigures& vendor, const Tolerance& tol);

enum class ErrorJudgement { within, precision_below_class, wrong };

// within: both figures inside the allowance. Otherwise precision_below_class when the error is
// small and spread out (max_rel <= 0.1 and norm_rel <= 0.02: what TF32 products, bf16 rounding or
// f16 accumulation produce), else wrong.
ErrorJudgement judge_error(const ErrorFigures& candidate, const Allowance& allowed);

// The denominator floor of max_rel: the reference's RMS, so that elements that cancel to near zero
// do not turn rounding noise into huge relative errors (GEMM guarantees normwise accuracy, not
// elementwise: max_rel is the worst element's error relative to max(|ref|, rms)).
double relative_floor(double ref_sum_sq, long long count);

}  // namespace kd::eval
