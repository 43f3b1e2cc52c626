// The product binding of dispatch_hook.hpp: libkdispatch.so's C API (kd_gemm_lookup +
// kd_gemm_launch). kd_init runs once, on the first keyable call of the process (not at preload
// time: a preloaded shim also lands in processes that never use cuBLAS).
#include <climits>
#include <mutex>

#include "dispatch_hook.hpp"
#include "kdispatch/kdispatch.h"

namespace kd::shim {
namespace {

static_assert(static_cast<int>(FallbackReason::not_initialized) == KD_FALLBACK_NOT_INITIALIZED);
static_assert(kFallbackReasonCount == KD_FALLBACK_REASON_COUNT);

// kd_init is not thread-safe against other kd_* calls: call_once makes every calling thread wait
// for it, and no kd_* call of the shim happens before.
bool initialized() noexcept {
  static std::once_flag once;
  static bool ok = false;
  try {
    std::call_once(once, [] { ok = kd_init(nullptr) == KD_SUCCESS; });
  } catch (...) {
    return false;
  }
  return ok;
}

FallbackReason reason_of(kd_fallback_reason r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < kFallbackReasonCount ? static_cast<FallbackReason>(i) : FallbackReason::unsupported;
}

kd_dtype dtype_of(DType t) noexcept {
  switch (t) {
    case DType::f16: return KD_DTYPE_F16;
    case DType::bf16: return KD_DTYPE_BF16;
    case DType::f32: break;
  }
  return KD_DTYPE_F32;
}

kd_gemm_desc desc_of(const GemmKey& k) noexcept {
  kd_gemm_desc d{};
  d.ta = k.ta == Transpose::T ? KD_OP_T : KD_OP_N;
  d.tb = k.tb == Transpose::T ? KD_OP_T : KD_OP_N;
  d.m = k.m;
  d.n = k.n;
  d.k = k.k;
  d.lda = k.lda;
  d.ldb = k.ldb;
  d.ldc = k.ldc;
  d.batch = k.batch;
  d.stride_a = k.stride_a;
  d.stride_b = k.stride_b;
  d.stride_c = k.stride_c;
  d.a_type = dtype_of(k.a);
  d.b_type = dtype_of(k.b);
  d.c_type = dtype_of(k.c);
  d.compute = k.compute == ComputeType::f16 ? KD_COMPUTE_F16 : KD_COMPUTE_F32;
  // The shim already applied the precision rule (TF32 only for f32 inputs): pass its outcome.
  d.math = k.precision == PrecisionClass::tf32 ? KD_MATH_TF32_ALLOWED : KD_MATH_DEFAULT;
  d.epilogue = k.epilogue == Epilogue::bias ? KD_EPILOGUE_BIAS : KD_EPILOGUE_NONE;
  d.beta_zero = k.beta_zero ? 1 : 0;
  return d;
}

kd_gemm_args args_of(const GemmCall& call) noexcept {
  const GemmKey& k = call.key;
  kd_gemm_args a{};
  a.a = call.a;
  a.b = call.b;
  a.c = call.c;
  a.workspace = nullptr;  // the lent workspace travels beside the struct (kd_gemm_launch_with_workspace)
  a.m = k.m;
  a.n = k.n;
  a.k = k.k;
  a.lda = k.lda;
  a.ldb = k.ldb;
  a.ldc = k.ldc;
  a.stride_a = k.stride_a;
  a.stride_b = k.stride_b;
  a.stride_c = k.stride_c;
  a.batch = static_cast<int>(k.batch);
  a.alpha = call.alpha;
  a.beta = call.beta;
  a.bias = call.bias;
  return a;
}

}  // namespace

DispatchResult dispatch_gemm(const GemmCall& call) noexcept {
  if (call.key.batch > INT_MAX) return FallbackReason::unsupported;  // kd_gemm_args.batch is int
  if (!initialized()) return FallbackReason::not_initialized;
  auto* stream = static_cast<CUstream_st*>(call.stream);
  const kd_gemm_desc desc = desc_of(call.key);
  const kd_entry* entry = nullptr;
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  int rc = kd_gemm_lookup(&desc, stream, &entry, &reason);
  if (rc == KD_FALLBACK) return reason_of(reason);
  if (rc == KD_ENOTINIT) return FallbackReason::not_initialized;
  if (rc != KD_SUCCESS) return FallbackReason::unsupported;  // KD_EINVAL: not a call it keys

  const kd_gemm_args args = args_of(call);
  rc = kd_gemm_launch_with_workspace(entry, &args, call.workspace, call.workspace_bytes, stream, &reason);
  if (rc == KD_SUCCESS) return Launched{};
  if (rc == KD_FALLBACK) return reason_of(reason);
  if (rc == KD_ECUDA) {
    // A later launch of a multi-launch plan failed: C may be partly written. Recomputing with
    // cuBLAS is correct only when C is not read.
    return call.key.beta_zero ? DispatchResult{FallbackReason::launch_failed}
                              : DispatchResult{LaunchBroken{}};
  }
  return FallbackReason::launch_failed;  // KD_EINVAL: nothing ran
}

}  // namespace kd::shim
