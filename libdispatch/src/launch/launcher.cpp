#include "launch/launcher.hpp"

#include "cuda/driver.hpp"
#include "launch/cublaslt_entry.hpp"

namespace kd {
namespace {

bool aligned(const void* p, std::uint32_t alignment_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment_bytes == 0;
}

LaunchResult fall_back(FallbackReason r, CUresult rc = CUDA_SUCCESS) {
  return {LaunchResult::Status::fell_back, r, rc};
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
    // One workspace per entry, owned by the first stream that launches it (kernels on one stream
    // run in order). A capture would bake the buffer into a graph replayed on any stream. The
    // owner is read first so the owning stream's calls take no locked instruction.
    CUstream owner = entry.workspace_stream.load(std::memory_order_acquire);
    if (owner != stream &&
        (owner != nullptr ||
         (!entry.workspace_stream.compare_exchange_strong(owner, stream, std::memory_order_acq_rel) &&
          owner != stream)))
      return fall_back(FallbackReason::workspace_busy);
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
        capture != CU_STREAM_CAPTURE_STATUS_NONE)
      return fall_back(FallbackReason::capturing);
  }

  if (entry.kind == EntryKind::cublaslt)
    return launch_cublaslt(*entry.cublaslt, *pa, pa->workspace, entry.workspace_bytes, stream);

  // cuLaunchKernel copies the parameter bytes before it returns; it never writes through them.
  void* params[] = {const_cast<kd_gemm_args*>(pa)};
  for (std::uint32_t i = 0; i < entry.launch_count; ++i) {
    const KernelLaunch& l = entry.launches[i];
    const CUresult rc = d->cuLaunchKernel(l.function, l.grid[0], l.grid[1], l.grid[2], l.block[0],
                                          l.block[1], l.block[2], l.smem_bytes, stream, params,
                                          nullptr);
    if (rc != CUDA_SUCCESS) {
      if (i == 0) return fall_back(FallbackReason::launch_failed, rc);
      return {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, rc};
    }
  }
  return {};
}

}  // namespace kd
