// The EntryLoader that loads records into CUDA: runs on the dispatcher's background thread only.
//
// Call keys carry the CUcontext of the caller's stream. A context is served only when it is its
// device's primary context (retained here until the loader is destroyed, so it outlives the
// modules loaded into it); any other context gets foreign_context.
//
// nvrtc_kernel records load their cubin as a module; cublaslt_algo records become a cuBLASLt entry
// (launch/cublaslt_entry.hpp) with one cuBLASLt handle per context, shared by its entries.
#pragma once

#include <cuda.h>

#include <map>
#include <memory>
#include <optional>

#include "runtime/entry_loader.hpp"
#include "key/gemm_key.hpp"

namespace kd {

struct CublasLtLibrary;
class LtHandle;
class LoadedModule;

class CudaEntryLoader : public EntryLoader {
public:
  // Where the loader finds cuBLASLt (cublaslt_library by default); tests pass a stand-in whose
  // version differs, to see a record from another cuBLASLt refused before any CUDA call.
  using CublasLtSource = const CublasLtLibrary* (*)() noexcept;
  // graph_workspace: entries with a workspace give a capturing stream's call a workspace of its
  // own as graph memory nodes (launch/launcher.cpp), where the device has memory pools.
  explicit CudaEntryLoader(CublasLtSource cublaslt_source = nullptr, bool graph_workspace = false);
  ~CudaEntryLoader() override;

  // Switches this thread to relaxed stream-capture mode, so that loading a module or allocating a
  // workspace while another thread captures a CUDA graph neither fails nor invalidates the capture.
  void on_thread_start() override;
  std::variant<std::string, FallbackReason> key_line(const CallKey& key) override;
  std::variant<LoadedEntry, FallbackReason> load(const CallKey& key, const Record& record) override;

private:
  struct ContextInfo {
    std::optional<DevicePart> device;  // nullopt: not a primary context
    CUdevice ordinal = 0;
    FallbackReason reason = FallbackReason::foreign_context;
  };
  const ContextInfo& context_info(CUcontext ctx);
  std::variant<LoadedEntry, FallbackReason> load_cublaslt(const CallKey& key, const Record& record);
  // The module of `record` in `ctx`: loaded here, or, for a range record, the one its other
  // entries in `ctx` already hold. Throws kd::Error when the driver refuses the cubin.
  std::shared_ptr<LoadedModule> module_for(CUcontext ctx, const Record& record);

  CublasLtSource cublaslt_source_;
  bool graph_workspace_;
  std::map<CUcontext, ContextInfo> contexts_;
  std::map<CUdevice, CUcontext> retained_;  // primary contexts retained by this loader
  std::map<CUcontext, std::shared_ptr<LtHandle>> lt_handles_;  // created on a context's first record
  // Range records' modules by (context, record identity): every n of a range shares one module.
  using ModuleKey = std::pair<CUcontext, std::uint64_t>;
  std::map<ModuleKey, std::weak_ptr<LoadedModule>> range_modules_;
};

}  // namespace kd
