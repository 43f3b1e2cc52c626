#include "launch/cublaslt_entry.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cublaslt/algo.hpp"
#include "cuda/driver.hpp"

namespace kd {
namespace {

// What a cuBLASLt entry owns: its descriptors, a share of the context's handle, the workspace.
// Destroyed when the dispatcher stops: synchronizes the context first (a queued matmul may still
// use them); errors are ignored there (the driver may be shutting down).
class CublasLtResources final : public EntryResources {
public:
  CublasLtResources(CUcontext ctx, std::shared_ptr<LtHandle> handle, std::unique_ptr<LtMatmul> matmul)
      : ctx_(ctx), handle_(std::move(handle)), matmul_(std::move(matmul)) {}
  ~CublasLtResources() override {
    const CudaDriver* d = cu_driver();
    if (d == nullptr || d->cuCtxPushCurrent(ctx_) != CUDA_SUCCESS) return;
    d->cuCtxSynchronize();
    if (workspace_ != 0) d->cuMemFree(workspace_);
    matmul_.reset();
    handle_.reset();
    CUcontext popped = nullptr;
    d->cuCtxPopCurrent(&popped);
  }
  CublasLtResources(const CublasLtResources&) = delete;
  CublasLtResources& operator=(const CublasLtResources&) = delete;

  void set_workspace(CUdeviceptr w) noexcept { workspace_ = w; }
  CublasLtCall& call() noexcept { return call_; }
  const LtMatmul& matmul() const noexcept { return *matmul_; }

private:
  CUcontext ctx_;
  std::shared_ptr<LtHandle> handle_;
  std::unique_ptr<LtMatmul> matmul_;
  CUdeviceptr workspace_ = 0;
  CublasLtCall call_;
};

LaunchResult fell_back(FallbackReason r) { return {LaunchResult::Status::fell_back, r, CUDA_SUCCESS}; }

// Statuses with which cublasLtMatmul returns before running anything.
bool nothing_ran(cublasStatus_t st) {
  return st == CUBLAS_STATUS_NOT_INITIALIZED || st == CUBLAS_STATUS_INVALID_VALUE ||
         st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH ||
         st == CUBLAS_STATUS_ALLOC_FAILED;
}

}  // namespace

std::optional<FallbackReason> cublaslt_record_refusal(const GemmShape& key, const Record& record,
                                                      const CublasLtLibrary* lt) {
  if (record.cublaslt_algo.size() != kCublasLtAlgoBytes) return FallbackReason::corrupted;
  if (key.epilogue == Epilogue::bias) return FallbackReason::unsupported;
  if (lt == nullptr) return FallbackReason::load_failed;
  if (record.cublas_version <= 0 || static_cast<std::size_t>(record.cublas_version) != lt->version)
    return FallbackReason::foreign_record;
  return std::nullopt;
}

LoadedEntry load_cublaslt_entry(const GemmShape& key, const Record& record, const CublasLtLibrary& lt,
                                CUcontext ctx, std::shared_ptr<LtHandle> handle) {
  auto matmul = std::make_unique<LtMatmul>(lt, key);
  const cublasLtMatmulAlgo_t algo = to_matmul_algo(record.cublaslt_algo);
  cublasLtMatmulHeuristicResult_t check{};
  KD_LT_CHECK(lt.cublasLtMatmulAlgoCheck(handle->get(), matmul->desc(), matmul->a(), matmul->b(),
                                         matmul->c(), matmul->c(), &algo, &check),
              record.key_line);
  const std::uint64_t workspace_bytes =
      std::max<std::uint64_t>(record.plan.workspace_bytes, check.workspaceSize);

  const cublasLtHandle_t raw_handle = handle->get();
  auto resources = std::make_unique<CublasLtResources>(ctx, std::move(handle), std::move(matmul));
  auto entry = std::make_unique<Entry>();
  entry->kind = EntryKind::cublaslt;
  entry->alignment_bytes = std::max(record.alignment_bytes, kCublasLtAlignmentBytes);
  if (workspace_bytes > 0) {
    CUdeviceptr workspace = 0;
    KD_CU_CHECK(cu().cuMemAlloc(&workspace, workspace_bytes), "cuBLASLt workspace");
    resources->set_workspace(workspace);
    entry->workspace = workspace;
    entry->workspace_bytes = workspace_bytes;
  }
  CublasLtCall& call = resources->call();
  call.lt = &lt;
  call.handle = raw_handle;
  call.desc = resources->matmul().desc();
  call.a = resources->matmul().a();
  call.b = resources->matmul().b();
  call.c = resources->matmul().c();
  call.algo = algo;
  call.half_scale = resources->matmul().half_scale();
  call.context = ctx;
  entry->cublaslt = &call;

  LoadedEntry out;
  out.entry = std::move(entry);
  out.resources = std::move(resources);
  return out;
}

LaunchResult launch_cublaslt(const CublasLtCall& call, const kd_gemm_args& args, void* workspace,
                             std::uint64_t workspace_bytes, CUstream stream) noexcept {
  const CudaDriver* d = cu_driver();
  if (d == nullptr) return fell_back(FallbackReason::no_gpu);
  // cuBLASLt launches through the runtime, which uses the thread's current context; the stream is
  // in the entry's (primary) context. A thread whose current context differs gets it pushed.
  CUcontext current = nullptr;
  const bool push = d->cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != call.context;
  if (push && d->cuCtxPushCurrent(call.context) != CUDA_SUCCESS) return fell_back(FallbackReason::launch_failed);

  const float alpha_f = args.alpha, beta_f = args.beta;
  const std::uint16_t alpha_h = call.half_scale ? to_half_bits(args.alpha) : 0;
  const std::uint16_t beta_h = call.half_scale ? to_half_bits(args.beta) : 0;
  const void* alpha = call.half_scale ? static_cast<const void*>(&alpha_h) : &alpha_f;
  const void* beta = call.half_scale ? static_cast<const void*>(&beta_h) : &beta_f;
  const cublasStatus_t st =
      call.lt->cublasLtMatmul(call.handle, call.desc, alpha, args.a, call.a, args.b, call.b, beta, args.c,
                              call.c, args.c, call.c, &call.algo, workspace, workspace_bytes, stream);
  if (push) {
    CUcontext popped = nullptr;
    d->cuCtxPopCurrent(&popped);
  }
  if (st == CUBLAS_STATUS_SUCCESS) return {};
  if (nothing_ran(st)) return fell_back(FallbackReason::launch_failed);
  return {LaunchResult::Status::failed_midway, FallbackReason::launch_failed, CUDA_SUCCESS};
}

}  // namespace kd
