// cuBLASLt records in applications: loading one into an entry on the background thread, and
// running it on a calling thread.
//
// Loading (CudaEntryLoader, background thread only): the record's algorithm is refused before any
// CUDA work when it cannot be trusted here (cublaslt_record_refusal); otherwise the matmul
// descriptor and layouts are built from the key (cublaslt/matmul.hpp), the algorithm is checked
// against them with cublasLtMatmulAlgoCheck, and its workspace is allocated. All of it is owned by
// the entry's resources, kept until the dispatcher stops, like a kernel's module.
//
// Running (launch_entry, calling threads): one cublasLtMatmul on the caller's stream with the
// prepared handle, descriptors and algorithm. kdispatch allocates nothing, takes no lock and does
// not synchronize there (what cublasLtMatmul does inside is cuBLASLt's).
//
// epilogue=bias keys are refused: the bias pointer is an attribute of the matmul descriptor, which
// every thread calling the entry shares, so setting it per call would race. The cublaslt proposer
// does not propose them either (search/src/cublaslt_proposer/cublaslt_proposer.hpp).
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <memory>
#include <optional>
#include <variant>

#include "runtime/entry_loader.hpp"
#include "cublaslt/library.hpp"
#include "cublaslt/matmul.hpp"
#include "key/gemm_key.hpp"
#include "launch/launcher.hpp"

namespace kd {

// What a calling thread needs; immutable after loading. Entry::cublaslt points here.
struct CublasLtCall {
  const CublasLtLibrary* lt = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool half_scale = false;  // compute 16F: alpha and beta go as half
  CUcontext context = nullptr;  // made current around the call when the thread's differs
};

// Why `record` (a cublaslt_algo record) cannot serve `key` with the loaded cuBLASLt `lt`, or
// nullopt. No CUDA call:
//   corrupted       the algorithm is not kCublasLtAlgoBytes bytes;
//   unsupported     epilogue=bias (see above);
//   load_failed     no cuBLASLt could be loaded (lt == nullptr);
//   foreign_record  the record's cuBLASLt version (Record::cublas_version) is not lt->version: a
//                   serialized algorithm is only valid for the library that produced it.
std::optional<FallbackReason> cublaslt_record_refusal(const GemmShape& key, const Record& record,
                                                      const CublasLtLibrary* lt);

// Builds the entry for a record that cublaslt_record_refusal accepted, in `ctx`, which the caller
// has made current. `handle` is the context's cuBLASLt handle (shared by its entries). Throws
// kd::Error when cuBLASLt rejects the descriptors or the algorithm, or the workspace allocation
// fails; nothing is leaked then.
LoadedEntry load_cublaslt_entry(const GemmShape& key, const Record& record, const CublasLtLibrary& lt,
                                CUcontext ctx, std::shared_ptr<LtHandle> handle);

// One cublasLtMatmul of `call` on `stream` with args' pointers and scalars; `workspace` of
// `workspace_bytes` is the entry's. Never throws. fell_back (launch_failed) when cuBLASLt refused
// the call before running anything; failed_midway when it failed while running (C may be written).
LaunchResult launch_cublaslt(const CublasLtCall& call, const kd_gemm_args& args, void* workspace,
                             std::uint64_t workspace_bytes, CUstream stream) noexcept;

}  // namespace kd
