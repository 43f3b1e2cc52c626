#include "gemm_call.hpp"

#include <array>

#include "key_checks.hpp"

namespace kd::shim {
namespace {

constexpr std::array<std::string_view, kUnsupportedCount> kUnsupportedNames{
    "device_scalars", "data_type",    "compute_type", "epilogue",
    "transpose",      "layout",       "lt_attribute", "shape",
    "batch_layout",   "handle_state", "null_argument", "internal_error"};

}  // namespace

std::string_view to_string(Unsupported reason) noexcept {
  const auto i = static_cast<std::size_t>(reason);
  return i < kUnsupportedCount ? kUnsupportedNames[i] : std::string_view("?");
}

std::optional<Unsupported> check_key(const GemmKey& k) noexcept {
  const std::optional<ShapeProblem> problem = shape_problem(k);
  if (!problem) return std::nullopt;
  switch (*problem) {
    case ShapeProblem::data_type: return Unsupported::data_type;
    case ShapeProblem::compute_type: return Unsupported::compute_type;
    case ShapeProblem::shape: return Unsupported::shape;
    case ShapeProblem::batch_layout: return Unsupported::batch_layout;
  }
  return Unsupported::internal_error;
}

}  // namespace kd::shim
