// The application the daemon GPU tests run: f32 nn.Linear through kd_gemm (ta=T tb=N, beta = 0,
// default math) of an m x k weight A on up to max_n tokens B, both of normal random values (seed
// 7), into C (m x n).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "cuda/driver.hpp"
#include "kdispatch/kdispatch.h"
#include "support/gpu.hpp"

namespace kd::test {

class LinearF32 {
public:
  // Allocates A, B and C in the current context and uploads A and B.
  LinearF32(std::int64_t m, std::int64_t k, std::int64_t max_n)
      : a(bytes(m * k)), b(bytes(k * max_n)), c(bytes(m * max_n)), m_(m), k_(k) {
    std::vector<float> ha(static_cast<std::size_t>(m * k)), hb(static_cast<std::size_t>(k * max_n));
    std::mt19937 rng(7);
    std::normal_distribution<float> dist;
    for (float& x : ha) x = dist(rng);
    for (float& x : hb) x = dist(rng);
    KD_CU_CHECK(cu().cuMemcpyHtoD(a.ptr, ha.data(), ha.size() * 4), "A");
    KD_CU_CHECK(cu().cuMemcpyHtoD(b.ptr, hb.data(), hb.size() * 4), "B");
  }

  // C = A^T B on the first n tokens, on stream s: kd_gemm's return code.
  int run(std::int64_t n, CUstream s) const {
    const float alpha = 1.f, beta = 0.f;
    return kd_gemm(KD_OP_T, KD_OP_N, m_, n, k_, &alpha, reinterpret_cast<const void*>(a.ptr), KD_DTYPE_F32, k_,
                   reinterpret_cast<const void*>(b.ptr), KD_DTYPE_F32, k_, &beta, reinterpret_cast<void*>(c.ptr),
                   KD_DTYPE_F32, m_, KD_COMPUTE_F32, KD_MATH_DEFAULT, s);
  }

  DeviceBuffer a, b, c;

private:
  static std::size_t bytes(std::int64_t floats) { return static_cast<std::size_t>(floats) * 4; }
  std::int64_t m_, k_;
};

}  // namespace kd::test
