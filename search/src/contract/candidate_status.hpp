// Why a candidate was rejected before it could be evaluated, or `ok`. The names are stored in search
// nodes and printed by `kdctl show`, so a value's name never changes meaning.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kd::search {

enum class CandidateStatus : std::uint8_t {
  ok,
  too_large,                  // source over the size limit; nothing else was looked at
  no_plan,                    // no `kdispatch:plan` comment
  bad_plan,                   // a plan that does not parse or is out of range (or two plans)
  host_code,                  // main(), __host__-only code, host headers, runtime API calls, <<<>>>
  missing_entry,              // a plan entry that the source or the PTX does not define
  bad_entry_signature,        // not extern "C", or not exactly one kd_gemm_args parameter
  shared_memory_over_limit,   // static + plan shared memory over the arch's per-block limit
  plan_exceeds_launch_bounds, // plan block larger than the entry's __launch_bounds__
  compile_error,              // NVRTC rejected the source; the log says why
  compile_timeout,            // NVRTC ran past the time limit and was killed
  compiler_crash,             // the compiler process died or NVRTC failed for a non-source reason
};

// Stable snake_case name, e.g. "missing_entry".
std::string_view to_string(CandidateStatus status);

// A rejection: the status and a one-line message naming what is wrong (with a line number when the
// source has one).
struct Rejection {
  CandidateStatus status = CandidateStatus::ok;
  std::string message;
};

}  // namespace kd::search
