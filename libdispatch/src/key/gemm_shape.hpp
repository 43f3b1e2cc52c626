// The one form a GEMM call's key takes from interception to the key line: the call's types,
// transposes, sizes, leading dimensions, batch layout, epilogue, beta0 and precision class, as a
// plain image without padding. It is what the shape line prints (key/gemm_key.hpp), what the
// registry's CallKey adds the CUDA context to (registry/call_key.hpp), and what GemmKey adds the
// device part to. GEMMs use the cuBLAS column-major convention exactly as the call was made.
#pragma once

#include <cstdint>
#include <type_traits>

namespace kd {

enum class DType : std::uint8_t { f16, bf16, f32 };
enum class ComputeType : std::uint8_t { f16, f32 };
enum class Transpose : std::uint8_t { N, T };
enum class Epilogue : std::uint8_t { none, bias };
// The arithmetic a kernel may use, from compute type and the handle's math mode
// (key/gemm_rules.hpp, precision_class_for): f32 = strict fp32 accumulate and products;
// tf32 = TF32 products allowed; f16 = compute 16F.
enum class PrecisionClass : std::uint8_t { f32, tf32, f16 };

// Which calls may be keyed at all (type combinations, sizes, batch layouts) is key/gemm_rules.hpp's.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;
  // Elements between batch entries; printed only when batch > 1. Keep them 0 when batch == 1 (as
  // parse_key and the C API do), or == against a parsed key fails although the lines are equal.
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  DType a = DType::f32, b = DType::f32, c = DType::f32;
  ComputeType compute = ComputeType::f32;
  PrecisionClass precision = PrecisionClass::f32;  // parse_key sets default_precision(compute)
  Transpose ta = Transpose::N, tb = Transpose::N;
  Epilogue epilogue = Epilogue::none;
  bool beta_zero = false;  // `beta0=1`: the call's beta is zero, so C is not read
  // Explicit padding, always zero: the registry compares and hashes a CallKey's bytes.
  std::uint8_t reserved[7] = {};

  bool operator==(const GemmShape&) const = default;
};
static_assert(sizeof(GemmShape) == 96, "GemmShape must have no implicit padding");
static_assert(std::has_unique_object_representations_v<GemmShape>);
static_assert(std::is_trivially_copyable_v<GemmShape>);

}  // namespace kd
