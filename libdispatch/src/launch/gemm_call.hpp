// Conversions between the C API's GEMM description, the hot-path CallKey and the canonical GemmKey.
#pragma once

#include <cuda.h>

#include <variant>

#include "kdispatch/kdispatch.h"
#include "key/gemm_key.hpp"
#include "registry/call_key.hpp"
#include "registry/fallback_reason.hpp"

namespace kd {

// Checks the description (enums in range, dims >= 1, leading dimensions large enough for the
// transposes, strides present iff batch > 1) and builds the key for `context`. Allocates nothing.
// Errors: FallbackReason::unsupported for a combination kdispatch does not key (f32 inputs with
// compute f16, mixed a/b types); std::monostate for an invalid description.
std::variant<CallKey, FallbackReason, std::monostate> call_key_from_desc(const kd_gemm_desc& d,
                                                                           CUcontext context) noexcept;

// The canonical key (without device part) for a call key.
GemmKey to_gemm_key(const CallKey& key);

}  // namespace kd
