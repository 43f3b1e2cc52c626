// What translating one intercepted GEMM gives: the call as the shim hands it to libkdispatch.so's
// C API (kd_gemm_desc, the call's key exactly as it was made in the cuBLAS column-major
// convention, plus the operands and the stream to launch on), or why the shim does not key it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "kdispatch/kdispatch.h"

namespace kd::shim {

struct GemmCall {
  kd_gemm_desc desc{};          // no device part: libkdispatch adds the stream's device
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;            // C and D: the shim keys only calls with D == C
  const void* bias = nullptr;   // set iff desc.epilogue == KD_EPILOGUE_BIAS; m elements of C's type
  float alpha = 1.0f;           // host values, converted from the call's scale type
  float beta = 0.0f;
  void* stream = nullptr;       // cudaStream_t == CUstream; the handle's (cuBLAS) or the argument (Lt)
  // The caller's workspace, which the call lends to a tuned kernel that needs one: the
  // cublasLtMatmul argument, or the handle's cublasSetWorkspace_v2 buffer (handle_workspaces.hpp);
  // empty when the handle uses cuBLAS's own pool.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Why the shim did not even look a call up: the call is outside what kdispatch keys. Each reason
// is counted (KD_STATS) and the call is forwarded untouched. Numbers are never reused.
enum class Unsupported : std::uint8_t {
  device_scalars = 0,     // alpha/beta in device memory (pointer mode device)
  data_type = 1,          // A/B/C type or combination not keyed
  compute_type = 2,       // compute type, scale type or math mode not keyed
  epilogue = 3,           // a cuBLASLt epilogue other than DEFAULT and BIAS
  transpose = 4,          // CUBLAS_OP_C or an unknown operation
  layout = 5,             // cuBLASLt layout: order, planar, batch mode, D != C, mismatched dims
  lt_attribute = 6,       // a cuBLASLt descriptor attribute we do not model is set (fp8 scales...)
  shape = 7,              // zero or negative sizes, leading dimensions too small (cuBLAS reports)
  batch_layout = 8,       // batch count or strides not keyed (overlapping C, bias with batch > 1)
  handle_state = 9,       // reading the handle or a descriptor failed
  null_argument = 10,     // alpha, beta or an operand pointer is NULL (cuBLAS reports)
  internal_error = 11,    // an exception inside the shim (caught at the entry point)
};
inline constexpr std::size_t kUnsupportedCount = 12;
std::string_view to_string(Unsupported reason) noexcept;

// call.alpha and call.beta from the host values the call passed (in the scale type of
// call.desc.compute, cuda_enums.hpp's read_host_scalar), and call.desc.beta_zero from beta. Both
// pointers are not null.
void set_scalars(GemmCall& call, const void* alpha, const void* beta) noexcept;

// The translation of one call: keyable, or why not.
using Translation = std::variant<GemmCall, Unsupported>;

// nullopt when libkdispatch keys `desc` (kd_gemm_desc_check: the type rules and the size and
// batch-layout rules live there, once), otherwise the reason the shim counts.
std::optional<Unsupported> unsupported_desc(const kd_gemm_desc& desc) noexcept;

}  // namespace kd::shim
