// Compiles one candidate translation unit with NVRTC for an exact GPU architecture, in the calling
// process. compile_service.hpp runs this in child processes, in parallel, cached and time-bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kdispatch/gemm.cuh"
#include "kdispatch/rowop.cuh"

namespace kd::search {

struct CompileRequest {
  std::string source;
  std::string name = "candidate.cu";  // shown in diagnostics
  std::string arch = "sm_90";         // exact target: machine code for this GPU only
  std::vector<std::string> extra_options;
  // The contract's argument struct every plan entry must take by value (contract/candidate_checks.hpp):
  // kd_gemm_args (128 bytes) for a GEMM key, kd_row_args (64) for a row operator's. Checked after
  // compiling; not part of the compile cache's key (it does not change the output).
  std::uint64_t args_bytes = kGemmArgsBytes;
  static constexpr std::uint64_t kGemmArgsBytes = sizeof(kd_gemm_args), kRowArgsBytes = sizeof(kd_row_args);
};

enum class CompileStatus { ok, compile_error };

struct CompileOutput {
  CompileStatus status = CompileStatus::compile_error;
  std::string cubin;  // machine code for `arch`, empty on error
  std::string ptx;    // PTX for the same arch (`.target sm_90`), empty on error
  std::string log;    // NVRTC's log, kept whether or not it compiled
  std::chrono::microseconds compile_time{0};  // wall time inside NVRTC
};

// The full NVRTC option list for `request`: --gpu-architecture=<arch> (sm_90 as sm_90a, the
// arch-specific features of the exact GPU: wgmma), --std=c++17,
// -default-device (a candidate is device code only, so unannotated functions are device
// functions), -lineinfo, the toolkit include directories (cuda_fp16.h, cuda_bf16.h, mma.h,
// cuda_pipeline.h; CCCL's cuda/barrier, cuda/pipeline, cuda/std/*, cooperative_groups.h) when
// installed, then request.extra_options. The embedded contract headers (kdispatch/gemm.cuh) are
// handed to NVRTC by name, not by path.
std::vector<std::string> compile_options(const CompileRequest& request);

// Compiles `request` to cubin and PTX. A source that does not compile is a value
// (CompileStatus::compile_error with the log), not an exception; NVRTC failing for any other
// reason (out of memory, bad option) throws kd::Error. Thread-safe: each call owns its program.
CompileOutput compile_cuda(const CompileRequest& request);

// The NVRTC version as "13.0".
std::string nvrtc_version();

}  // namespace kd::search
