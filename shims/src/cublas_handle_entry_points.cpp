// The interposed cuBLAS handle setters (version node libcublas.so.13, see shims/exports.map): each
// forwards untouched and, when cuBLAS accepted the call, updates what the shim knows of the
// handle's workspace (handle_workspaces.hpp). They are not GEMMs: nothing is keyed or counted, and
// with KD_DISABLE=1 they only forward.
#include "handle_workspaces.hpp"
#include "intercept.hpp"
#include "real_cublas.hpp"

using kd::shim::real_cublas;
using kd::shim::ShimMode;

namespace {

bool tracking() noexcept { return kd::shim::shim_config().mode != ShimMode::pass_through; }

}  // namespace

KD_SHIM_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  const auto real = real_cublas().create.get();
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t st = real(handle);
  if (st == CUBLAS_STATUS_SUCCESS && handle != nullptr && tracking()) kd::shim::clear_handle_workspace(*handle);
  return st;
}

KD_SHIM_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  const auto real = real_cublas().destroy.get();
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Forget first: once destroyed, the address may come back as another handle.
  if (tracking()) kd::shim::clear_handle_workspace(handle);
  return real(handle);
}

KD_SHIM_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  const auto real = real_cublas().set_stream.get();
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t st = real(handle, stream);
  // cuBLAS resets the workspace to its default pool on every cublasSetStream.
  if (st == CUBLAS_STATUS_SUCCESS && tracking()) kd::shim::clear_handle_workspace(handle);
  return st;
}

KD_SHIM_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                    size_t workspaceSizeInBytes) {
  const auto real = real_cublas().set_workspace.get();
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t st = real(handle, workspace, workspaceSizeInBytes);
  if (tracking()) {
    if (st == CUBLAS_STATUS_SUCCESS)
      kd::shim::set_handle_workspace(handle, workspace, workspaceSizeInBytes);
    else
      kd::shim::clear_handle_workspace(handle);
  }
  return st;
}
