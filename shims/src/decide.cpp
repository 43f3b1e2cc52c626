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
      count_fallback(FallbackReason::launch_failed);
      return Decision::failed;
    }
    const FallbackReason reason = std::get<FallbackReason>(result);
    count_fallback(reason);
    // Launch-stage fallbacks have a cached kernel already: only misses belong in the prewarm list.
    const bool is_miss = kFallbackReasons[static_cast<std::size_t>(reason)].is_miss;
    if (is_miss && !shim_config().record_path.empty()) record_miss(call.key.shape_line());
    return Decision::forward;
  } catch (...) {
    count_unsupported(Unsupported::internal_error);
    return Decision::forward;
  }
}

}  // namespace kd::shim
