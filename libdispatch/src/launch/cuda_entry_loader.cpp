#include "launch/cuda_entry_loader.hpp"

#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "cublaslt/library.hpp"
#include "cublaslt/matmul.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "launch/cublaslt_entry.hpp"

namespace kd {
namespace {

constexpr std::uint32_t kDefaultSmemLimitBytes = 48 * 1024;

// Pushes a context for the scope of the object.
class ContextScope {
public:
  explicit ContextScope(CUcontext ctx) {
    KD_CU_CHECK(cu().cuCtxPushCurrent(ctx), "registry context");
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    cu().cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

// What a loaded entry owns. Destroyed when the dispatcher stops: synchronizes the context so no
// queued kernel still runs, then unloads and frees. Errors are ignored there (the driver may be
// shutting down at process exit).
class CudaResources final : public EntryResources {
public:
  CudaResources(CUcontext ctx, CUmodule module, CUdeviceptr workspace)
      : ctx_(ctx), module_(module), workspace_(workspace) {}
  ~CudaResources() override {
    const CudaDriver* d = cu_driver();
    if (d == nullptr) return;
    if (d->cuCtxPushCurrent(ctx_) != CUDA_SUCCESS) return;
    d->cuCtxSynchronize();
    if (workspace_ != 0) d->cuMemFree(workspace_);
    if (module_ != nullptr) d->cuModuleUnload(module_);
    CUcontext popped = nullptr;
    d->cuCtxPopCurrent(&popped);
  }
  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;
  void set_workspace(CUdeviceptr w) noexcept { workspace_ = w; }

private:
  CUcontext ctx_;
  CUmodule module_;
  CUdeviceptr workspace_;
};

// The loader thread loads modules and allocates while the application may be capturing a graph in
// global capture mode, which would make those calls fail and invalidate the capture. Relaxed mode
// on this thread allows them.
void set_relaxed_capture_mode() {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  cu().cuThreadExchangeStreamCaptureMode(&mode);
}

}  // namespace

CudaEntryLoader::CudaEntryLoader(CublasLtSource cublaslt_source, bool graph_workspace)
    : cublaslt_source_(cublaslt_source != nullptr ? cublaslt_source : &cublaslt_library),
      graph_workspace_(graph_workspace) {}

CudaEntryLoader::~CudaEntryLoader() {
  lt_handles_.clear();  // entries' resources, which share them, are gone by now (dispatcher order)
  const CudaDriver* d = cu_driver();
  if (d == nullptr) return;
  for (const auto& [dev, ctx] : retained_) d->cuDevicePrimaryCtxRelease(dev);
}

void CudaEntryLoader::on_thread_start() {
  if (cu_driver() != nullptr) set_relaxed_capture_mode();
}

const CudaEntryLoader::ContextInfo& CudaEntryLoader::context_info(CUcontext ctx) {
  if (auto it = contexts_.find(ctx); it != contexts_.end()) return it->second;
  ContextInfo info;
  try {
    const CudaDriver& d = cu();
    CUdevice dev = 0;
    {
      ContextScope scope(ctx);
      KD_CU_CHECK(d.cuCtxGetDevice(&dev), "registry context");
    }
    CUcontext primary = nullptr;
    KD_CU_CHECK(d.cuDevicePrimaryCtxRetain(&primary, dev), "primary context");
    if (primary == ctx) {
      retained_.emplace(dev, primary);  // once per context: contexts_ caches the answer
      const DeviceInfo di = query_device(static_cast<int>(dev));
      info.device = DevicePart{di.arch, di.name, di.sms};
      info.ordinal = dev;
    } else {
      d.cuDevicePrimaryCtxRelease(dev);
      info.reason = FallbackReason::foreign_context;
    }
  } catch (const std::exception& e) {
    spdlog::warn("kdispatch: cannot identify the device of a context: {}", e.what());
    info.reason = cu_driver() == nullptr ? FallbackReason::no_gpu : FallbackReason::foreign_context;
  }
  return contexts_.emplace(ctx, std::move(info)).first->second;
}

std::variant<std::string, FallbackReason> CudaEntryLoader::key_line(const CallKey& key) {
  const ContextInfo& info = context_info(reinterpret_cast<CUcontext>(key.context));
  if (!info.device) return info.reason;
  return full_line(key, *info.device);
}

std::variant<LoadedEntry, FallbackReason> CudaEntryLoader::load_cublaslt(const CallKey& key,
                                                                         const Record& record) {
  const CublasLtLibrary* lt = cublaslt_source_();
  if (const auto refused = cublaslt_record_refusal(key, record, lt)) {
    if (*refused == FallbackReason::foreign_record)
      spdlog::warn("kdispatch: the record for {} holds a cuBLASLt {} algorithm; this process has cuBLASLt {}",
                   record.key_line, record.cublas_version, lt->version);
    else if (*refused == FallbackReason::load_failed)
      spdlog::warn("kdispatch: cannot run the cuBLASLt record for {}: {}", record.key_line,
                   cublaslt_source_ == &cublaslt_library ? cublaslt_unavailable_reason() : "no cuBLASLt");
    return *refused;
  }
  const auto ctx = reinterpret_cast<CUcontext>(key.context);
  try {
    ContextScope scope(ctx);
    std::shared_ptr<LtHandle>& handle = lt_handles_[ctx];
    if (!handle) handle = std::make_shared<LtHandle>(*lt);
    LoadedEntry out = load_cublaslt_entry(key, record, *lt, ctx, handle);
    out.entry->graph_workspace = graph_workspace_ && out.entry->workspace_bytes > 0 && current_device_has_memory_pools();
    return out;
  } catch (const std::exception& e) {
    spdlog::warn("kdispatch: loading the cuBLASLt record for {} failed: {}", record.key_line, e.what());
    return FallbackReason::load_failed;
  }
}

std::variant<LoadedEntry, FallbackReason> CudaEntryLoader::load(const CallKey& key,
                                                                const Record& record) {
  if (record.kind == RecordKind::cublaslt_algo) return load_cublaslt(key, record);
  if (record.kind != RecordKind::nvrtc_kernel) return FallbackReason::unsupported;
  const LaunchPlan& plan = record.plan;
  if (plan.launches.empty() || plan.launches.size() > kMaxLaunches || record.cubin.empty())
    return FallbackReason::corrupted;
  const auto ctx = reinterpret_cast<CUcontext>(key.context);
  const CudaDriver& d = cu();
  try {
    ContextScope scope(ctx);
    CUmodule module = nullptr;
    KD_CU_CHECK(d.cuModuleLoadData(&module, record.cubin.data()), record.key_line);
    // Owns the module (and the workspace once allocated) from here on, also on failure.
    auto resources = std::make_unique<CudaResources>(ctx, module, 0);
    auto entry = std::make_unique<Entry>();
    entry->alignment_bytes = record.alignment_bytes;
    entry->launch_count = static_cast<std::uint32_t>(plan.launches.size());
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      const LaunchSpec& spec = plan.launches[i];
      KernelLaunch& l = entry->launches[i];
      KD_CU_CHECK(d.cuModuleGetFunction(&l.function, module, spec.entry.c_str()), spec.entry);
      if (spec.smem_bytes > kDefaultSmemLimitBytes)
        KD_CU_CHECK(d.cuFuncSetAttribute(l.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(spec.smem_bytes)),
                    spec.entry);
      l.grid = spec.grid;
      l.block = spec.block;
      l.smem_bytes = spec.smem_bytes;
      l.pdl = spec.pdl;
    }
    if (plan.workspace_bytes > 0) {
      CUdeviceptr workspace = 0;
      KD_CU_CHECK(d.cuMemAlloc(&workspace, plan.workspace_bytes), "workspace");
      resources->set_workspace(workspace);
      entry->workspace = workspace;
      entry->workspace_bytes = plan.workspace_bytes;
      entry->graph_workspace = graph_workspace_ && current_device_has_memory_pools();
    }
    LoadedEntry out;
    out.entry = std::move(entry);
    out.resources = std::move(resources);
    return out;
  } catch (const std::exception& e) {
    spdlog::warn("kdispatch: loading {} failed: {}", record.key_line, e.what());
    return FallbackReason::load_failed;
  }
}

}  // namespace kd
