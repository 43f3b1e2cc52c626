#include "eval/error_criterion.hpp"

#include <cmath>

namespace kd::eval {

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  return std::ldexp(1.0, -8);
}

Tolerance tolerance_for(const GemmKey& key, double factor) {
  const double u_acc = key.compute == ComputeType::f16 ? unit_roundoff(DType::f16) : unit_roundoff(DType::f32);
  const double floor =
      4.0 * unit_roundoff(key.c) + 2.0 * std::sqrt(static_cast<double>(key.k)) * u_acc;
  return {factor, floor, floor};
}

Allowance allowed_error(const ErrorFigures& vendor, const Tolerance& tol) {
  return {tol.factor * vendor.max_rel + tol.max_rel_floor,
          tol.factor * vendor.norm_rel + tol.norm_rel_floor};
}

ErrorJudgement judge_error(const ErrorFigures& candidate, const Allowance& allowed) {
  // NaN figures compare false everywhere: they fall through to `wrong`.
  if (candidate.max_rel <= allowed.max_rel && candidate.norm_rel <= allowed.norm_rel)
    return ErrorJudgement::within;
  if (candidate.max_rel <= 0.1 && candidate.norm_rel <= 0.02)
    return ErrorJudgement::precision_below_class;
  return ErrorJudgement::wrong;
}

double relative_floor(double ref_sum_sq, long long count) {
  if (count <= 0) return 1e-30;
  const double rms = std::sqrt(ref_sum_sq / static_cast<double>(count));
  return std::fmax(rms, 1e-30);
}

}  // namespace kd::eval
