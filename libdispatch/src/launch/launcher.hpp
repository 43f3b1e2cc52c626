// Launches a loaded entry on the caller's stream with the kd_gemm_args struct, after the checks the
// record asks for: its plan's kernels, or (EntryKind::cublaslt) one cublasLtMatmul with the stored
// algorithm. Runs on calling threads: no lock, allocation or synchronization.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kdispatch/gemm.cuh"
#include "registry/entry.hpp"
#include "registry/fallback_reason.hpp"

namespace kd {

struct LaunchResult {
  enum class Status : std::uint8_t {
    launched,     // every launch of the plan was queued
    fell_back,    // nothing ran; `reason` says why; the caller runs its fallback
    failed_midway // a launch after the first failed: C may be partially written
  };
  Status status = Status::launched;
  FallbackReason reason = FallbackReason::launch_failed;
  CUresult cuda_result = CUDA_SUCCESS;
};

// `args.workspace` is replaced by the entry's workspace. Requires entry.state == loaded and a
// stream in the entry's context.
LaunchResult launch_entry(const Entry& entry, const kd_gemm_args& args, CUstream stream) noexcept;

}  // namespace kd
