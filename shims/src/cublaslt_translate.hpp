// cublasLtMatmul -> GemmCall. Reads the matmul descriptor and the four layouts through the real
// cuBLASLt on every call (descriptors are mutable and may be reused with new attributes).
#pragma once

#include <cublasLt.h>

#include "translation.hpp"

namespace kd::shim {

struct LtMatmulArgs {
  cublasLtMatmulDesc_t desc = nullptr;
  const void* alpha = nullptr;
  const void* a = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr;
  const void* b = nullptr;
  cublasLtMatrixLayout_t b_layout = nullptr;
  const void* beta = nullptr;
  const void* c = nullptr;
  cublasLtMatrixLayout_t c_layout = nullptr;
  void* d = nullptr;
  cublasLtMatrixLayout_t d_layout = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Keyed: host alpha/beta of the compute type's scale type, epilogue DEFAULT or BIAS (bias in C's
// type), column-major layouts, D == C with equal layouts, equal batch counts, no fp8 scaling or
// emulation attributes. Everything else is Unsupported with its reason. The algo argument is not
// part of the key. Never throws.
Translation translate_cublaslt(const LtMatmulArgs& args) noexcept;

}  // namespace kd::shim
