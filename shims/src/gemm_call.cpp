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
  // The type combinations kdispatch keys (key_rules.hpp in libdispatch, the same rule).
  if (k.a != k.b) return Unsupported::data_type;
  const bool c_ok = k.c == k.a || (k.c == DType::f32 && k.a != DType::f32);
  if (!c_ok) return Unsupported::data_type;
  if (k.compute == ComputeType::f16 && !(k.a == DType::f16 && k.c == DType::f16)) {
    return Unsupported::compute_type;
  }
  // Degenerate or invalid sizes: cuBLAS handles (or reports) them.
  if (k.m <= 0 || k.n <= 0 || k.k <= 0 || k.batch <= 0) return Unsupported::shape;
  if (k.lda < min_lda(k) || k.ldb < min_ldb(k) || k.ldc < k.m) return Unsupported::shape;
  if (k.batch > 1) {
    if (k.stride_a < 0 || k.stride_b < 0) return Unsupported::batch_layout;
    // Batches whose outputs overlap have no defined result under concurrent kernels.
    std::int64_t c_extent = 0;  // elements from the first to one past the last of one C
    if (__builtin_mul_overflow(k.ldc, k.n - 1, &c_extent) ||
        __builtin_add_overflow(c_extent, k.m, &c_extent) || k.stride_c < c_extent) {
      return Unsupported::batch_layout;
    }
    if (k.epilogue == Epilogue::bias) return Unsupported::batch_layout;
  }
  return std::nullopt;
}

}  // namespace kd::shim
