// Replies and kernel sources for the LLM tests (unit and GPU: built into kd_test_fake_llm).
#pragma once

#include <string>
#include <string_view>

#include "key/row_shape.hpp"

namespace kd::llm::test {

// A contract-abiding kernel; `scale` makes distinct sources.
std::string good_kernel(std::string_view entry = "kd_main", int scale = 1);
// Host code: a main() and a runtime API call.
std::string host_code_kernel();
// A kernel without a kdispatch:plan comment.
std::string planless_kernel();
// A correct row-operator kernel under <kdispatch/rowop.cuh> for `op` on `dtype` data (weight and
// bias applied when non-null), written as a model would: a block of 256 threads per row,
// grid-striding over rows, the statistics in two passes over x (mean, then the centred sum of
// squares; the max, then the sum of exponentials), f32 arithmetic, y rounded once. Its plan is one
// "pdl" launch of `grid` blocks whose kernel waits first. Passes the gate (tests/gpu/llm).
std::string row_kernel(RowOp op, DType dtype, std::string_view entry = "kd_row", int grid = 1056);
// A row kernel of the contract's form that writes zeros: compiles and passes the contract checks,
// fails the gate.
std::string zero_row_kernel(DType dtype, std::string_view entry = "kd_row_zero");
// `source` in a ```cuda fence.
std::string fenced(std::string_view source, std::string_view language = "cuda");

}  // namespace kd::llm::test
