#include "launch/launcher.hpp"

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

// The record's kernels (or its cuBLASLt call) with `args` as given, workspace included.
LaunchResult launch_plan(const Entry& entry, const kd_gemm_args& args, CUstream stream, const CudaDriver& d) noexcept {
  if (entry.kind == EntryKind::cublaslt)
    return launch_cublaslt(*entry.cublaslt, args, args.workspace, entry.workspace_bytes, stream);

  // cuLaunchKernel copies the parameter bytes before it returns; it never writes through them.
  void* params[] = {const_cast<kd_gemm_args*>(&args)};
  for (std::uint32_t i = 0; i < entry.launch_count; ++i) {
    const KernelLaunch& l = entry.launches[i];
    const CUresult rc = launch_kernel(d, l.function, l.grid, l.block, l.smem_bytes, stream, params, l.pdl);
    if (rc != CUDA_SUCCESS) {
      if (i == 0) return fall_back(FallbackReason::launch_failed, rc);
      return {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, rc};
    }
  }
  return {};
}

// A launch on a capturing stream. The entry's own workspace cannot go into the graph: a graph
// replays on any stream, concurrently with the owner's calls and with other graphs. So the capture
// takes a workspace of its own: a stream-ordered allocation before the kernels and its free after
// them, both captured as graph memory nodes. CUDA gives each graph its own memory for them and
// never runs one executable graph concurrently with itself, so no two launches share the buffer.
// Nothing is allocated now: the graph's memory is reserved when it is instantiated.
LaunchResult launch_captured(const Entry& entry, const kd_gemm_args& args, CUstream stream,
                             const CudaDriver& d) noexcept {
  if (!entry.graph_workspace) return fall_back(FallbackReason::capturing);
  CUdeviceptr workspace = 0;
  const CUresult alloc = d.cuMemAllocAsync(&workspace, entry.workspace_bytes, stream);
  if (alloc != CUDA_SUCCESS) return fall_back(FallbackReason::capturing, alloc);
  kd_gemm_args own = args;
  own.workspace = reinterpret_cast<void*>(workspace);
  LaunchResult r = launch_plan(entry, own, stream, d);
  const CUresult freed = d.cuMemFreeAsync(workspace, stream);
  // An allocation the graph never frees would make its second replay fail: report it like a
  // launch that failed after the first kernel, so the caller does not count a clean hit.
  if (freed != CUDA_SUCCESS && r.status == LaunchResult::Status::launched)
    r = {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, freed};
  return r;
}

}  // namespace

LaunchResult launch_entry(const Entry& entry, const kd_gemm_args& args, CUstream stream) noexcept {
  const std::uint32_t align = entry.alignment_bytes == 0 ? 1 : entry.alignment_bytes;
  if (!aligned(args.a, align) || !aligned(args.b, align) || !aligned(args.c, align) ||
      (args.bias != nullptr && !aligned(args.bias, align)))
    return fall_back(FallbackReason::misaligned);

  const CudaDriver* d = cu_driver();
  if (d == nullptr) return fall_back(FallbackReason::no_gpu);

  // The kernel sees the entry's workspace; the caller's struct is copied only when its workspace
  // field differs (usually both are null), which keeps a 128-byte copy off the common hit.
  kd_gemm_args with_workspace;
  const kd_gemm_args* pa = &args;
  if (args.workspace != reinterpret_cast<void*>(entry.workspace)) {
    with_workspace = args;
    with_workspace.workspace = reinterpret_cast<void*>(entry.workspace);
    pa = &with_workspace;
  }
  if (entry.workspace_bytes > 0) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS)
      return fall_back(FallbackReason::capturing);
    if (capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) return launch_captured(entry, args, stream, *d);
    if (capture != CU_STREAM_CAPTURE_STATUS_NONE) return fall_back(FallbackReason::capturing);
    // One workspace per entry, owned by the first stream that launches it (kernels on one stream
    // run in order). The owner is read first so the owning stream's calls take no locked
    // instruction.
    CUstream owner = entry.workspace_stream.load(std::memory_order_acquire);
    if (owner != stream &&
        (owner != Entry::no_stream() ||
         (!entry.workspace_stream.compare_exchange_strong(owner, stream, std::memory_order_acq_rel) &&
          owner != stream)))
      return fall_back(FallbackReason::workspace_busy);
  }
  return launch_plan(entry, *pa, stream, *d);
}

}  // namespace kd
