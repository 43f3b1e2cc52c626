// kd_gemm's miss path: the same GEMM through cuBLAS, loaded lazily with dlopen("libcublas.so.13")
// so that libkdispatch.so starts on machines without it.
//
// A cuBLAS handle is created per (thread, context) on that thread's first miss (this allocates:
// the one documented exception to "calling threads never allocate") and reused after; it is
// destroyed when the thread exits.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kdispatch/kdispatch.h"

namespace kd {

struct CublasGemmCall {
  kd_gemm_desc desc;
  const float* alpha;  // host
  const float* beta;   // host
  const void* a;
  const void* b;
  void* c;
};

enum class CublasStatus : std::uint8_t { ok, unavailable, failed, unsupported };

// Runs the call on `stream` in context `ctx` (the stream's). Never throws.
CublasStatus cublas_gemm(const CublasGemmCall& call, CUcontext ctx, CUstream stream) noexcept;

}  // namespace kd
