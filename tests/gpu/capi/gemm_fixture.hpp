// Shared pieces of the C API GPU tests and benchmark: NVRTC-compiled fp32 GEMM kernels for one
// exact shape (a plain one and a shared-memory tiled one, so a swap changes the code, and a split
// one with a workspace), records for them, device buffers and an fp64 reference.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kdispatch/kdispatch.h"
#include "key/gemm_key.hpp"
#include "store/record.hpp"

namespace kd::test {

// C(m x n) = alpha * A(m x k) B(k x n) + beta * C, column-major, NN, fp32, strict fp32 compute.
struct GemmShape {
  std::int64_t m = 384, n = 256, k = 512;
};

// plain and tiled: one launch, no workspace. split: two launches that meet in a workspace (each
// half of k summed into it, then C from the two halves), like a split-K kernel; on sm_90+ the second
// is a programmatic dependent launch ("pdl"). split_dependent: split whose first launch is a
// programmatic dependent too (of the application's previous kernel; it waits first).
enum class KernelVariant { plain, tiled, split, split_dependent };

// The C API's description of the shape's call with beta == 0, and its arguments on device buffers.
kd_gemm_desc gemm_desc_for(const GemmShape& s);
kd_gemm_args gemm_args_for(const GemmShape& s, const void* a, const void* b, void* c, float alpha);

// The canonical key of the shape (beta0 as given) for device 0.
GemmKey gemm_key_for(const GemmShape& s, bool beta_zero);
// Compiles `variant` for device 0's arch and builds the record for `key` (throws on failure).
Record make_gemm_record(const GemmKey& key, const GemmShape& s, KernelVariant variant,
                        std::int64_t created_unix_s);

struct HostGemm {
  std::vector<float> a, b;
  std::vector<double> ref;      // alpha * A B (beta == 0)
  std::vector<double> abs_sum;  // |alpha| * sum |a||b|: the error scale per element
};
HostGemm make_host_gemm(const GemmShape& s, float alpha, unsigned seed);

// Elements of `c` farther from the fp64 reference than fp32 accumulation allows (NaN counts).
std::int64_t count_wrong(const std::vector<float>& c, const HostGemm& h);

}  // namespace kd::test
