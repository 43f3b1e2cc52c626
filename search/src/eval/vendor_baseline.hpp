// The baseline: the exact cuBLAS/cuBLASLt call the shim intercepted for a key, enqueued on the
// evaluator's stream. cublasGemmEx (strided batched for batch > 1) with the compute type and the
// handle's math mode of the key's precision class; cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS for
// epilogue=bias.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "key/gemm_key.hpp"

namespace kd::eval {

struct GemmOperands {
  CUdeviceptr a = 0, b = 0, c = 0, bias = 0;
};

class VendorBaseline {
public:
  // Creates the handles for `key` bound to `stream`; throws kd::Error (cuda) on a cuBLAS failure.
  // Requires the device's primary context to be current (cuBLAS runs on the runtime's context).
  VendorBaseline(const GemmKey& key, CUstream stream);
  ~VendorBaseline();
  VendorBaseline(const VendorBaseline&) = delete;
  VendorBaseline& operator=(const VendorBaseline&) = delete;

  // Enqueues C = alpha op(A) op(B) + beta C (+ bias). Throws kd::Error on a cuBLAS status.
  void run(const GemmOperands& ops, double alpha, double beta);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// IEEE half bits of `v` (round to nearest even), for compute-16F scale factors.
std::uint16_t half_bits(float v);

}  // namespace kd::eval
