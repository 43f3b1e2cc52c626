// Measuring the roofline once per GPU: device copy bandwidth and, per peak class, the rate of a
// large vendor GEMM. Requires the device's primary context current; throws kd::Error.
#pragma once

#include <cuda.h>

#include <string>

#include "eval/eval_kernels.hpp"

namespace kd::eval {

// Bytes read plus written per second by cuMemcpyDtoDAsync of a large buffer (best of 5);
// `max_bytes` caps the buffer (half of it is copied to the other half).
double measure_copy_bandwidth(CUstream stream, std::uint64_t max_bytes);

// Flops per second of an 8192^3 vendor GEMM of `peak_class` ("bf16/f32", see peak_class()),
// best of 5 after warm-up; for strict f32 the largest of that and the TF32 and f16 GEMMs' rates
// over 3 (three split products on tensor cores). Throws kd::Error (usage) for an unknown class.
double measure_peak_flops(const std::string& peak_class, CUstream stream, const EvalKernels& kernels);

}  // namespace kd::eval
