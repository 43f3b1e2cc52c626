// The one place where the shim's decision logic meets libkdispatch.so. Two bindings implement it:
// dispatch_hook_capi.cpp (the product: kd_gemm_lookup + kd_gemm_launch_with_workspace) and, in the
// test suite, a recording binding that proves what a hit would launch. Keeping the seam this small
// is what lets the CPU tests run every entry point's hit path without a GPU.
#pragma once

#include <variant>

#include "kdispatch/kdispatch.h"
#include "translation.hpp"

namespace kd::shim {

// The cached kernel was launched on call.stream; the vendor library must not run.
struct Launched {};

// The vendor library must run: no tuned kernel ran, for `reason` (kdispatch.h's kd_fallback_reason;
// kd_fallback_reason_is_miss says whether it is a miss).
struct FellBack {
  kd_fallback_reason reason;
};

// A tuned kernel failed after writing part of C while C is also an input (beta != 0): neither the
// tuned result nor a cuBLAS recomputation is correct, so the call fails
// (CUBLAS_STATUS_EXECUTION_FAILED), as cuBLAS itself reports a failed kernel.
struct LaunchBroken {};

using DispatchResult = std::variant<Launched, FellBack, LaunchBroken>;

// Looks `call` up and, on a hit, launches the cached kernel on call.stream with call's operands.
// Contract for every binding: never throws; on the calling thread never compiles, loads,
// allocates device memory or synchronizes (so it is safe while the stream captures a CUDA graph);
// a miss reason (kd_fallback_reason_is_miss) means the call was reported as a miss.
DispatchResult dispatch_gemm(const GemmCall& call) noexcept;

}  // namespace kd::shim
