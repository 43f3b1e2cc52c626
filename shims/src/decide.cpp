#include "dispatch_hook.hpp"
#include "intercept.hpp"
#include "miss_recorder.hpp"

namespace kd::shim {

Decision decide(const Translation& translation) noexcept {
  try {
    if (const auto* why = std::get_if<Unsupported>(&translation)) {
      count_unsupported(*why);
      return Decision::forward;
    }
    const GemmCall& call = std::get<GemmCall>(translation);
    const DispatchResult result = dispatch_gemm(call);
    if (std::holds_alternative<Launched>(result)) {
      count_hit();
      return Decision::launched;
    }
    if (std::holds_alternative<LaunchBroken>(result)) {
      count_fallback(KD_FALLBACK_LAUNCH_FAILED);
      return Decision::failed;
    }
    const kd_fallback_reason reason = std::get<FellBack>(result).reason;
    count_fallback(reason);
    // Launch-stage fallbacks have a cached kernel already: only misses belong in the prewarm list.
    if (kd_fallback_reason_is_miss(reason) != 0 && !shim_config().record_path.empty()) record_miss(call.desc);
    return Decision::forward;
  } catch (...) {
    count_unsupported(Unsupported::internal_error);
    return Decision::forward;
  }
}

}  // namespace kd::shim
