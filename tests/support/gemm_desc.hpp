// The C API's description of one unbatched call, for the tests that call kd_gemm_lookup or
// kd_gemm_desc_check: every operand of `type`, f32 compute, default math, no epilogue, beta not
// zero, and leading dimensions as small as the layout allows (A's stored rows m or k, B's k or n,
// C's m). A test sets the fields it is about on the result.
#pragma once

#include <cstdint>

#include "kdispatch/kdispatch.h"

namespace kd::test {

inline kd_gemm_desc gemm_desc(kd_op ta, kd_op tb, std::int64_t m, std::int64_t n, std::int64_t k, kd_dtype type) {
  return kd_gemm_desc{.ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                      .lda = ta == KD_OP_N ? m : k, .ldb = tb == KD_OP_N ? k : n, .ldc = m,
                      .batch = 1, .stride_a = 0, .stride_b = 0, .stride_c = 0,
                      .a_type = type, .b_type = type, .c_type = type, .compute = KD_COMPUTE_F32,
                      .math = KD_MATH_DEFAULT, .epilogue = KD_EPILOGUE_NONE, .beta_zero = 0};
}

}  // namespace kd::test
