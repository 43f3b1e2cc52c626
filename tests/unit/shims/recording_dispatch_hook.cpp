// A test binding of shims/src/dispatch_hook.hpp, linked into libkdispatch_cublas_testhook.so.
// KD_TEST_HOOK selects the outcome of every lookup: "hit" (prints what the launch would receive,
// one "LAUNCH" line on stdout, and reports Launched), "misaligned" (a launch-stage fallback) or,
// unset, "no_entry" (a miss). It proves what the shim hands to libdispatch for every entry point
// without a GPU.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "dispatch_hook.hpp"

namespace kd::shim {

DispatchResult dispatch_gemm(const GemmCall& call) noexcept {
  const char* mode_env = std::getenv("KD_TEST_HOOK");
  const std::string_view mode = mode_env != nullptr ? mode_env : "";
  if (mode == "misaligned") return FallbackReason::misaligned;
  if (mode != "hit") return FallbackReason::no_entry;
  try {
    std::printf("LAUNCH %s | a=%p b=%p c=%p bias=%p alpha=%g beta=%g stream=%p ws=%p wsbytes=%zu\n",
                call.key.shape_line().c_str(), call.a, call.b, call.c, call.bias,
                static_cast<double>(call.alpha), static_cast<double>(call.beta), call.stream,
                call.workspace, call.workspace_bytes);
  } catch (...) {
    return FallbackReason::load_failed;
  }
  return Launched{};
}

}  // namespace kd::shim
