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

// A workspace the caller lends for this call (kd_gemm_launch_with_workspace): nothing else uses it
// while the call's work on its stream runs. Empty: none.
struct LentWorkspace {
  CUdeviceptr ptr = 0;
  std::uint64_t bytes = 0;
};
// Lent workspaces are used only from this alignment up (what cuMemAlloc and PyTorch's allocator
// give; the families' partial tiles assume 16-byte vectors, cuBLASLt records 256 bytes).
inline constexpr std::uint64_t kLentWorkspaceAlignment = 256;

// `args.workspace` is replaced by the workspace the call uses (kdispatch.h, Caveats: the lent one
// when it serves, else the entry's own, else a graph's own under KD_GRAPH_WORKSPACE). Requires
// entry.state == loaded and a stream in the entry's context.
LaunchResult launch_entry(const Entry& entry, const kd_gemm_args& args, LentWorkspace lent,
                          CUstream stream) noexcept;

}  // namespace kd
