// The C API's description of a GEMM call (kd_gemm_desc, kdispatch.h) read as the call's
// GemmShape, by the rules of key/gemm_rules.hpp: what kd_gemm_lookup, kd_gemm and
// kd_gemm_desc_check decide with, and what a miss prints as its key line.
#pragma once

#include "kdispatch/kdispatch.h"
#include "key/gemm_shape.hpp"

namespace kd {

// Writes every field of `shape` from `d` (the precision class by precision_class_for) and checks
// it. Returns KD_DESC_KEYABLE, or the first problem: KD_DESC_INVALID for an enum out of range or
// batch strides set with batch == 1 (then `shape` is unspecified), otherwise the ShapeProblem of
// key/gemm_rules.hpp by its kdispatch.h number. No allocation: it runs on every call.
kd_gemm_desc_problem read_gemm_desc(const kd_gemm_desc& d, GemmShape& shape) noexcept;

}  // namespace kd
