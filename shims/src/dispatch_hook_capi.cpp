// The product binding of dispatch_hook.hpp: libkdispatch.so's C API (kd_gemm_lookup +
// kd_gemm_launch_with_workspace). kd_init runs once, on the first keyable call of the process (not
// at preload time: a preloaded shim also lands in processes that never use cuBLAS).
#include <climits>
#include <mutex>

#include "dispatch_hook.hpp"

namespace kd::shim {
namespace {

// kd_init is not thread-safe against other kd_* calls: call_once makes every calling thread wait
// for it, and no kd_* call of the shim that reads process state happens before (translations call
// kd_gemm_desc_check, which reads none).
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

kd_gemm_args args_of(const GemmCall& call) noexcept {
  const kd_gemm_desc& k = call.desc;
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
  if (call.desc.batch > INT_MAX) return FellBack{KD_FALLBACK_UNSUPPORTED};  // kd_gemm_args.batch is int
  if (!initialized()) return FellBack{KD_FALLBACK_NOT_INITIALIZED};
  auto* stream = static_cast<CUstream_st*>(call.stream);
  const kd_entry* entry = nullptr;
  kd_fallback_reason reason = KD_FALLBACK_NO_ENTRY;
  int rc = kd_gemm_lookup(&call.desc, stream, &entry, &reason);
  if (rc == KD_FALLBACK) return FellBack{reason};
  if (rc == KD_ENOTINIT) return FellBack{KD_FALLBACK_NOT_INITIALIZED};
  if (rc != KD_SUCCESS) return FellBack{KD_FALLBACK_UNSUPPORTED};  // KD_EINVAL: not a call it keys

  const kd_gemm_args args = args_of(call);
  rc = kd_gemm_launch_with_workspace(entry, &args, call.workspace, call.workspace_bytes, stream, &reason);
  if (rc == KD_SUCCESS) return Launched{};
  if (rc == KD_FALLBACK) return FellBack{reason};
  if (rc == KD_ECUDA) {
    // A later launch of a multi-launch plan failed: C may be partly written. Recomputing with
    // cuBLAS is correct only when C is not read.
    return call.desc.beta_zero != 0 ? DispatchResult{FellBack{KD_FALLBACK_LAUNCH_FAILED}}
                                    : DispatchResult{LaunchBroken{}};
  }
  return FellBack{KD_FALLBACK_LAUNCH_FAILED};  // KD_EINVAL: nothing ran
}

}  // namespace kd::shim
