#include "launch/launcher.hpp"

#include <algorithm>
#include <type_traits>

#include "cuda/driver.hpp"
#include "cuda/kernel_launch.hpp"
#include "launch/cublaslt_entry.hpp"

namespace kd {
namespace {

bool aligned(const void* p, std::uint32_t alignment_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment_bytes == 0;
}

LaunchResult fall_back(FallbackReason r, CUresult rc = CUDA_SUCCESS) {
  return {LaunchResult::Status::fell_back, r, rc};
}

// Whether a plan's dependent first launch ("pdl") may depend on what precedes it: not after the
// allocation node of a KD_GRAPH_WORKSPACE capture, which is no kernel.
enum class FirstLaunch : std::uint8_t { as_planned, in_stream_order };

// The record's kernels (or its cuBLASLt call) with `args` as given, workspace included. Args is
// the kernel's one parameter: kd_gemm_args, or kd_row_args for a row operator's entry (which the
// loader only makes of kernels).
template <class Args>
LaunchResult launch_plan(const Entry& entry, const Args& args, CUstream stream, const CudaDriver& d,
                         FirstLaunch first = FirstLaunch::as_planned) noexcept {
  if constexpr (std::is_same_v<Args, kd_gemm_args>) {
    if (entry.kind == EntryKind::cublaslt)
      return launch_cublaslt(*entry.cublaslt, args, args.workspace, entry.workspace_bytes, stream);
  } else {
    if (entry.kind != EntryKind::kernels) return fall_back(FallbackReason::unsupported);
  }

  // cuLaunchKernel copies the parameter bytes before it returns; it never writes through them.
  void* params[] = {const_cast<Args*>(&args)};
  for (std::uint32_t i = 0; i < entry.launch_count; ++i) {
    const KernelLaunch& l = entry.launches[i];
    const bool pdl = l.pdl && (i > 0 || first == FirstLaunch::as_planned);
    const CUresult rc = launch_kernel(d, l.function, l.grid, l.block, l.smem_bytes, stream, params, pdl);
    if (rc != CUDA_SUCCESS) {
      if (i == 0) return fall_back(FallbackReason::launch_failed, rc);
      return {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, rc};
    }
  }
  return {};
}

// A launch on a capturing stream under KD_GRAPH_WORKSPACE. The entry's own workspace cannot go into the graph: a graph
// replays on any stream, concurrently with the owner's calls and with other graphs. So the capture
// takes a workspace of its own: a stream-ordered allocation before the kernels and its free after
// them, both captured as graph memory nodes. CUDA gives each graph its own memory for them and
// never runs one executable graph concurrently with itself, so no two launches share the buffer.
// Nothing is allocated now: the graph's memory is reserved when it is instantiated.
template <class Args>
LaunchResult launch_captured(const Entry& entry, const Args& args, CUstream stream,
                             const CudaDriver& d) noexcept {
  CUdeviceptr workspace = 0;
  const CUresult alloc = d.cuMemAllocAsync(&workspace, entry.workspace_bytes, stream);
  if (alloc != CUDA_SUCCESS) return fall_back(FallbackReason::capturing, alloc);
  Args own = args;
  own.workspace = reinterpret_cast<void*>(workspace);
  LaunchResult r = launch_plan(entry, own, stream, d, FirstLaunch::in_stream_order);
  const CUresult freed = d.cuMemFreeAsync(workspace, stream);
  // An allocation the graph never frees would make its second replay fail: report it like a
  // launch that failed after the first kernel, so the caller does not count a clean hit.
  if (freed != CUDA_SUCCESS && r.status == LaunchResult::Status::launched)
    r = {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, freed};
  return r;
}

// The lent workspace can hold the entry's: large enough, and aligned as a cuMemAlloc buffer is.
bool lent_serves(const Entry& entry, LentWorkspace lent) {
  return lent.ptr != 0 && lent.bytes >= entry.workspace_bytes && lent.ptr % kLentWorkspaceAlignment == 0;
}

// A launch with the entry's own workspace: one buffer per entry, owned by the first stream that
// launches it (kernels on one stream run in order). The owner is read first so the owning
// stream's calls take no locked instruction.
template <class Args>
LaunchResult launch_owned(const Entry& entry, const Args& args, CUstream stream, const CudaDriver& d) {
  CUstream owner = entry.workspace_stream.load(std::memory_order_acquire);
  if (owner != stream &&
      (owner != Entry::no_stream() ||
       (!entry.workspace_stream.compare_exchange_strong(owner, stream, std::memory_order_acq_rel) &&
        owner != stream)))
    return fall_back(FallbackReason::workspace_busy);
  Args own = args;
  own.workspace = reinterpret_cast<void*>(entry.workspace);
  return launch_plan(entry, own, stream, d);
}

// launch_entry's work once the pointers passed their alignment check.
template <class Args>
LaunchResult launch_aligned(const Entry& entry, const Args& args, LentWorkspace lent, CUstream stream) noexcept {
  const CudaDriver* d = cu_driver();
  if (d == nullptr) return fall_back(FallbackReason::no_gpu);

  if (entry.workspace_bytes == 0) {
    // The kernel sees no workspace, as the gate ran it; the caller's struct is copied only when
    // its workspace field is set, which keeps a 128-byte copy off the common hit.
    if (args.workspace == nullptr) return launch_plan(entry, args, stream, *d);
    Args none = args;
    none.workspace = nullptr;
    return launch_plan(entry, none, stream, *d);
  }
  // The caller's buffer is what the cuBLAS call this replaces would have used, with the same
  // promise from the caller (nothing else uses it meanwhile), captured or not: the safest and the
  // only workspace a graph can keep without memory nodes (ARCHITECTURE.md).
  if (lent_serves(entry, lent)) {
    Args with_lent = args;
    with_lent.workspace = reinterpret_cast<void*>(lent.ptr);
    return launch_plan(entry, with_lent, stream, *d);
  }
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (d->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS) return fall_back(FallbackReason::capturing);
  if (capture == CU_STREAM_CAPTURE_STATUS_NONE) return launch_owned(entry, args, stream, *d);
  if (capture == CU_STREAM_CAPTURE_STATUS_ACTIVE && entry.graph_workspace)
    return launch_captured(entry, args, stream, *d);
  return fall_back(lent.ptr != 0 ? FallbackReason::workspace_too_small : FallbackReason::capturing);
}

}  // namespace

LaunchResult launch_entry(const Entry& entry, const kd_gemm_args& args, LentWorkspace lent,
                          CUstream stream) noexcept {
  const std::uint32_t align = entry.alignment_bytes == 0 ? 1 : entry.alignment_bytes;
  if (!aligned(args.a, align) || !aligned(args.b, align) || !aligned(args.c, align) ||
      (args.bias != nullptr && !aligned(args.bias, align)))
    return fall_back(FallbackReason::misaligned);
  return launch_aligned(entry, args, lent, stream);
}

LaunchResult launch_row_entry(const Entry& entry, const kd_row_args& args, CUstream stream) noexcept {
  const std::uint32_t align = std::max(entry.alignment_bytes, kRowAlignmentBytes);
  if (!aligned(args.x, align) || !aligned(args.y, align) ||
      (args.weight != nullptr && !aligned(args.weight, align)) ||
      (args.bias != nullptr && !aligned(args.bias, align)))
    return fall_back(FallbackReason::misaligned);
  return launch_aligned(entry, args, LentWorkspace{}, stream);
}

}  // namespace kd
