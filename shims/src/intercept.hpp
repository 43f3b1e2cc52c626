// What every interposed symbol does, in one place:
//   real function missing      -> CUBLAS_STATUS_NOT_INITIALIZED (nothing to forward to)
//   KD_DISABLE=1               -> forward untouched
//   nested (reentrancy guard)  -> forward untouched (cuBLAS calling cuBLASLt itself)
//   otherwise                  -> translate, look up; a hit returns CUBLAS_STATUS_SUCCESS having
//                                 launched the cached kernel, anything else forwards untouched
//                                 (except LaunchBroken: CUBLAS_STATUS_EXECUTION_FAILED).
// Nothing thrown escapes: translation and dispatch are noexcept and decide() catches the rest.
#pragma once

#include <cublas_api.h>

#include "translation.hpp"
#include "real_library.hpp"
#include "reentrancy_guard.hpp"
#include "shim_config.hpp"
#include "shim_stats.hpp"

// The only symbols the shim exports (with the version script shims/exports.map).
#define KD_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace kd::shim {

enum class Decision : unsigned char { launched, forward, failed };

// Counts the outcome, records a miss (KD_RECORD) and says whether the cached kernel ran, the call
// must be forwarded, or it failed beyond recovery (see LaunchBroken).
Decision decide(const Translation& translation) noexcept;

// `translate` runs only for top-level calls in dispatch mode; `args` are forwarded unchanged.
template <class Fn, class Translate, class... Args>
cublasStatus_t intercept(EntryPoint entry, RealFunction<Fn>& real_fn, Translate&& translate,
                         Args... args) noexcept {
  const Fn real = real_fn.get();
  if (real == nullptr) {
    count_real_missing();
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  if (shim_config().mode == ShimMode::pass_through) {
    count_pass_through();
    return real(args...);
  }
  if (ReentrancyGuard::active()) {
    count_nested(entry);
    return real(args...);
  }
  const ReentrancyGuard guard;  // held while forwarding too: cuBLAS's own calls are nested
  count_call(entry);
  switch (decide(translate())) {
    case Decision::launched: return CUBLAS_STATUS_SUCCESS;
    case Decision::failed: return CUBLAS_STATUS_EXECUTION_FAILED;
    case Decision::forward: break;
  }
  return real(args...);
}

}  // namespace kd::shim
