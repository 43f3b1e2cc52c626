#include "launch/cuda_entry_loader.hpp"

#include <spdlog/spdlog.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/error.hpp"
#include "cublaslt/library.hpp"
#include "cublaslt/matmul.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "key/row_key.hpp"
#include "launch/cublaslt_entry.hpp"

namespace kd {

namespace {

// Runs release(driver) on an object of `ctx` once the context's queued work finished (pushes the
// context, synchronizes, releases, pops). Errors are ignored: the driver may be shutting down.
template <class Release>
void release_after_sync(CUcontext ctx, Release release) noexcept {
  const CudaDriver* d = cu_driver();
  if (d == nullptr) return;
  if (d->cuCtxPushCurrent(ctx) != CUDA_SUCCESS) return;
  d->cuCtxSynchronize();
  release(*d);
  CUcontext popped = nullptr;
  d->cuCtxPopCurrent(&popped);
}

}  // namespace

// A loaded module: unloaded when the last entry resources holding it go, which is when the
// dispatcher stops (it keeps every entry's resources until then). The context is synchronized
// first so no queued kernel still runs. Errors are ignored (the driver may be shutting down).
class LoadedModule {
public:
  LoadedModule(CUcontext ctx, CUmodule module) : ctx_(ctx), module_(module) {}
  ~LoadedModule() {
    if (module_ != nullptr) release_after_sync(ctx_, [this](const CudaDriver& d) { d.cuModuleUnload(module_); });
  }
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  CUmodule get() const noexcept { return module_; }

private:
  CUcontext ctx_;
  CUmodule module_;
};

namespace {

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

// What a loaded entry owns: its module (shared with the other entries of a range record) and its
// workspace. Destroyed when the dispatcher stops: synchronizes the context so no queued kernel
// still runs, then frees. Errors are ignored there (the driver may be shutting down at exit).
class CudaResources final : public EntryResources {
public:
  CudaResources(CUcontext ctx, std::shared_ptr<LoadedModule> module)
      : ctx_(ctx), module_(std::move(module)) {}
  ~CudaResources() override {
    if (workspace_ != 0) release_after_sync(ctx_, [this](const CudaDriver& d) { d.cuMemFree(workspace_); });
  }
  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;
  void set_workspace(CUdeviceptr w) noexcept { workspace_ = w; }
  CUmodule module() const noexcept { return module_->get(); }

private:
  CUcontext ctx_;
  std::shared_ptr<LoadedModule> module_;
  CUdeviceptr workspace_ = 0;
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
  if (is_row_call(key)) return RowKey{row_shape_of(key), info.device}.full_line();
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

std::shared_ptr<LoadedModule> CudaEntryLoader::module_for(CUcontext ctx, const Record& record) {
  // A range record's entries (one per distinct n) share its module; an exact record's entry has
  // its own, as before (two records may hold one cubin with different shared-memory opt-ins).
  const bool shared = record.plan.has_rules();
  const ModuleKey id{ctx, XXH3_64bits(record.key_line.data(), record.key_line.size()) ^
                              XXH3_64bits(record.cubin.data(), record.cubin.size())};
  if (shared) {
    if (const auto it = range_modules_.find(id); it != range_modules_.end())
      if (auto module = it->second.lock()) return module;
  }
  CUmodule raw = nullptr;
  KD_CU_CHECK(cu().cuModuleLoadData(&raw, record.cubin.data()), record.key_line);
  auto module = std::make_shared<LoadedModule>(ctx, raw);
  if (shared) range_modules_[id] = module;
  return module;
}

std::variant<LoadedEntry, FallbackReason> CudaEntryLoader::load(const CallKey& key,
                                                                const Record& record) {
  // A row operator's record is a compiled kernel with an exact plan (its kernels take kd_row_args).
  if (is_row_call(key) && (record.kind != RecordKind::nvrtc_kernel || record.plan.has_rules()))
    return FallbackReason::unsupported;
  if (record.kind == RecordKind::cublaslt_algo) return load_cublaslt(key, record);
  if (record.kind != RecordKind::nvrtc_kernel) return FallbackReason::unsupported;
  // A range record's grid for this call's n (issue 29); the cache checked the rules at lookup.
  // A plan without rules is its own grid whatever n is.
  auto at_n = plan_at_n(record.plan, key.n);
  if (const auto* bad = std::get_if<PlanError>(&at_n)) {
    spdlog::warn("kdispatch: the record {} cannot serve n={}: {}", record.key_line, key.n, bad->message);
    return FallbackReason::corrupted;
  }
  const LaunchPlan& plan = std::get<LaunchPlan>(at_n);
  if (plan.launches.empty() || plan.launches.size() > kMaxLaunches || record.cubin.empty())
    return FallbackReason::corrupted;
  const auto ctx = reinterpret_cast<CUcontext>(key.context);
  const CudaDriver& d = cu();
  try {
    ContextScope scope(ctx);
    // Owns the module (and the workspace once allocated) from here on, also on failure.
    auto resources = std::make_unique<CudaResources>(ctx, module_for(ctx, record));
    auto entry = std::make_unique<Entry>();
    entry->alignment_bytes = record.alignment_bytes;
    entry->launch_count = static_cast<std::uint32_t>(plan.launches.size());
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      const LaunchSpec& spec = plan.launches[i];
      KernelLaunch& l = entry->launches[i];
      KD_CU_CHECK(d.cuModuleGetFunction(&l.function, resources->module(), spec.entry.c_str()), spec.entry);
      // Whenever the plan asks any: the default limit (48 KiB) counts the kernel's static shared
      // memory too, so a plan within it could still fail to launch.
      if (spec.smem_bytes > 0)
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
