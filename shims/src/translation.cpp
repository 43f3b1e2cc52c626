#include "translation.hpp"

#include <array>

#include "cuda_enums.hpp"

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

void set_scalars(GemmCall& call, const void* alpha, const void* beta) noexcept {
  call.alpha = read_host_scalar(alpha, call.desc.compute);
  call.beta = read_host_scalar(beta, call.desc.compute);
  call.desc.beta_zero = call.beta == 0.0f ? 1 : 0;
}

std::optional<Unsupported> unsupported_desc(const kd_gemm_desc& desc) noexcept {
  switch (kd_gemm_desc_check(&desc)) {
    case KD_DESC_KEYABLE: return std::nullopt;
    case KD_DESC_DATA_TYPE: return Unsupported::data_type;
    case KD_DESC_COMPUTE_TYPE: return Unsupported::compute_type;
    case KD_DESC_SHAPE: return Unsupported::shape;
    case KD_DESC_BATCH_LAYOUT: return Unsupported::batch_layout;
    case KD_DESC_INVALID: break;  // the translations fill every enum: not reached
  }
  return Unsupported::internal_error;
}

}  // namespace kd::shim
