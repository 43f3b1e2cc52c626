// Launches a loaded entry on the caller's stream with the kd_gemm_args struct (or a row operator's
// kd_row_args), after the checks the
// record asks for: its plan's kernels, or (EntryKind::cublaslt) one cublasLtMatmul with the stored
// algorithm. Runs on calling threads: no lock, allocation or synchronization.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kdispatch/gemm.cuh"
#include "kdispatch/rowop.cuh"
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

// The alignment a row operator's x, y, weight and bias need at least (the C API's contract; a
// record may ask for more): what a 16-byte vector load needs.
inline constexpr std::uint32_t kRowAlignmentBytes = 16;

// launch_entry for a row operator's entry (a kernels entry whose plan takes kd_row_args): x, y and
// the non-null weight and bias aligned to max(kRowAlignmentBytes, the record's), then the same
// workspace rules with nothing lent (the entry's own workspace outside a capture, a graph's own
// under KD_GRAPH_WORKSPACE). `args.workspace` is replaced as there. Same requirements.
LaunchResult launch_row_entry(const Entry& entry, const kd_row_args& args, CUstream stream) noexcept;

}  // namespace kd
