// cuBLASLt, loaded at run time from libcublasLt.so.13.
//
// libkdispatch.so links no CUDA library: an application must start (and fall back) on a machine
// without one. cuBLASLt is opened on first use, like the driver (cuda/driver.hpp); when it is
// missing, cublaslt_library() is null, cublaslt_unavailable_reason() says why, and cuBLASLt
// records fall back. In a process that links cuBLASLt already (kdispatch-worker, through its
// vendor baseline), dlopen returns that same library, so both see one version.
//
// A serialized cublasLtMatmulAlgo_t is only meaningful to the cuBLASLt version that produced it:
// `version` (cublasLtGetVersion) is stored with every cuBLASLt record and compared exactly.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <string>

#include "common/error.hpp"

namespace kd {

// X-macro list of every cuBLASLt entry point the project uses through this table.
#define KD_LT_FUNCTIONS(X)                                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusName)            \
  X(cublasLtGetStatusString) X(cublasLtMatmul) X(cublasLtMatmulDescCreate)                       \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)   \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                             \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                           \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)                      \
  X(cublasLtMatmulAlgoCheck) X(cublasLtMatmulAlgoConfigGetAttribute)                             \
  X(cublasLtMatmulAlgoConfigSetAttribute) X(cublasLtMatmulAlgoCapGetAttribute)

struct CublasLtLibrary {
#define KD_LT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KD_LT_FUNCTIONS(KD_LT_MEMBER)
#undef KD_LT_MEMBER
  std::size_t version = 0;  // cublasLtGetVersion(): 130100 for 13.1.0
};

// The process's cuBLASLt, loaded once (thread-safe) from libcublasLt.so.13; nullptr when it cannot
// be loaded or lacks an entry point (cublaslt_unavailable_reason() says which). Never throws.
const CublasLtLibrary* cublaslt_library() noexcept;
std::string cublaslt_unavailable_reason();

// The loaded library; throws kd::Error (cuda) naming the reason when there is none.
const CublasLtLibrary& loaded_cublaslt();

// "CUBLAS_STATUS_NOT_SUPPORTED: ..." for a status, through the loaded library when there is one.
std::string cublaslt_status_text(cublasStatus_t status);

[[noreturn]] void throw_cublaslt_error(cublasStatus_t status, std::string_view call,
                                       std::string_view object, std::string_view where);

}  // namespace kd

// KD_LT_CHECK(call, object): `call` returns cublasStatus_t through a CublasLtLibrary table.
#define KD_LT_CHECK(call, object)                                                         \
  do {                                                                                    \
    const cublasStatus_t kd_st_ = (call);                                                 \
    if (kd_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::kd::throw_cublaslt_error(kd_st_, #call, (object), KD_WHERE);                      \
  } while (0)
