// Compiles one candidate translation unit with NVRTC for an exact GPU architecture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kd::search {

struct CompileRequest {
  std::string source;
  std::string name = "candidate.cu";  // shown in diagnostics
  std::string arch = "sm_90";         // exact target: machine code for this GPU only
  std::vector<std::string> extra_options;
};

enum class CompileStatus { ok, compile_error };

struct CompileOutput {
  CompileStatus status = CompileStatus::compile_error;
  std::string cubin;  // machine code for `arch`, empty on error
  std::string ptx;    // PTX for the same arch's virtual target, empty on error
  std::string log;    // NVRTC's log, kept whether or not it compiled
};

// Compiles `request` to cubin and PTX. A source that does not compile is a value
// (CompileStatus::compile_error with the log), not an exception; NVRTC failing for any other
// reason (out of memory, bad option) throws kd::Error. Thread-safe: each call owns its program.
CompileOutput compile_cuda(const CompileRequest& request);

// The NVRTC version as "13.0".
std::string nvrtc_version();

}  // namespace kd::search
