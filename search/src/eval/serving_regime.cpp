#include "eval/serving_regime.hpp"

#include <algorithm>
#include <cmath>

#include "eval/gemm_problem.hpp"

namespace kd::eval {

ServingShape serving_shape(const GemmKey& key, std::uint64_t l2_bytes, double floor_us, std::uint64_t budget_bytes) {
  const std::uint64_t a = span_bytes(matrix_a(key, 0)), b = span_bytes(matrix_b(key, 0));
  return size_serving(b > a ? WeightOperand::b : WeightOperand::a, std::max(a, b), l2_bytes, floor_us, budget_bytes);
}

ServingShape size_serving(WeightOperand weight, std::uint64_t weight_bytes, std::uint64_t l2_bytes, double floor_us,
                          std::uint64_t budget_bytes) {
  ServingShape s;
  s.weight = weight;
  s.weight_bytes = std::max<std::uint64_t>(weight_bytes, 1);
  const std::uint64_t want = kL2Multiple * l2_bytes;
  std::uint64_t copies = (want + s.weight_bytes - 1) / s.weight_bytes;
  copies = std::clamp<std::uint64_t>(copies, 1, kMaxCalls);
  const std::uint64_t affordable = 1 + budget_bytes / s.weight_bytes;
  s.copies = static_cast<int>(std::max<std::uint64_t>(1, std::min(copies, affordable)));
  const double per_call = std::max(floor_us, 0.5);
  const int for_time = static_cast<int>(std::ceil(kTargetGraphUs / per_call));
  s.calls = std::clamp(std::max(for_time, s.copies), kMinCalls, kMaxCalls);
  // Every copy equally often: a multiple of the copies where that stays within the cap.
  if (s.calls % s.copies != 0) {
    const int rounded = (s.calls / s.copies + 1) * s.copies;
    if (rounded <= kMaxCalls) s.calls = rounded;
  }
  return s;
}

}  // namespace kd::eval
