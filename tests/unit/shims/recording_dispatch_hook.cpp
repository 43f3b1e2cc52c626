// A test binding of shims/src/dispatch_hook.hpp, linked into libkdispatch_cublas_testhook.so.
// KD_TEST_HOOK selects the outcome of every lookup: "hit" (prints what the launch would receive,
// one "LAUNCH" line on stdout, and reports Launched), "misaligned" (a launch-stage fallback) or,
// unset, "no_entry" (a miss). It proves what the shim hands to libkdispatch.so's C API for every
// entry point without a GPU; the key line is the C API's own (kd_gemm_desc_key_line).
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "dispatch_hook.hpp"

namespace kd::shim {

DispatchResult dispatch_gemm(const GemmCall& call) noexcept {
  const char* mode_env = std::getenv("KD_TEST_HOOK");
  const std::string_view mode = mode_env != nullptr ? mode_env : "";
  if (mode == "misaligned") return FellBack{KD_FALLBACK_MISALIGNED};
  if (mode != "hit") return FellBack{KD_FALLBACK_NO_ENTRY};
  char line[KD_KEY_LINE_BYTES];
  if (kd_gemm_desc_key_line(&call.desc, line, sizeof line) != KD_SUCCESS)
    return FellBack{KD_FALLBACK_UNSUPPORTED};
  std::printf("LAUNCH %s | a=%p b=%p c=%p bias=%p alpha=%g beta=%g stream=%p ws=%p wsbytes=%zu\n", line,
              call.a, call.b, call.c, call.bias, static_cast<double>(call.alpha),
              static_cast<double>(call.beta), call.stream, call.workspace, call.workspace_bytes);
  return Launched{};
}

}  // namespace kd::shim
