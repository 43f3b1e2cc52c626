// The workspace each cuBLAS handle was given with cublasSetWorkspace_v2, so that a tuned kernel can
// use the same buffer the cuBLAS call it replaces would have used (inside CUDA graph captures too:
// a captured kernel keeps the pointer, exactly as cuBLAS's own captured kernels do). cuBLAS has no
// getter for it, so the shim interposes the calls that set or reset it:
//   cublasSetWorkspace_v2  -> the handle's workspace is (ptr, bytes)
//   cublasSetStream_v2     -> none (cuBLAS resets the workspace to its default pool on a new stream)
//   cublasCreate_v2, cublasDestroy_v2 -> none (a handle's address may be reused)
// PyTorch sets a workspace per (handle, stream) before every cuBLAS call it makes.
//
// Thread rules: a handle's entry is written by the threads that configure the handle and read by
// the threads that call GEMMs on it; cuBLAS requires those not to overlap for one handle, so the
// pair (ptr, bytes) read on a GEMM is the one last set. The table never allocates and never blocks.
#pragma once

#include <cstddef>

struct cublasContext;

namespace kd::shim {

struct LentWorkspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

// `bytes` == 0 or `ptr` == nullptr clears the entry. When the table is full (more than its
// capacity of distinct handles were ever seen) a new handle is not tracked: its GEMMs lend no
// workspace, which only costs speed (records with a workspace then use their own).
void set_handle_workspace(cublasContext* handle, void* ptr, std::size_t bytes) noexcept;
void clear_handle_workspace(cublasContext* handle) noexcept;
LentWorkspace handle_workspace(cublasContext* handle) noexcept;

}  // namespace kd::shim
