// Shared by the cublaslt GPU tests: the keys they search, and one cublaslt-only search through the
// real worker with every node printed.
#pragma once

#include <string>
#include <vector>

#include "driver/search_driver.hpp"
#include "eval/evaluator.hpp"
#include "key/gemm_key.hpp"

namespace kd::test {

// The decode-shaped keys of the issue, for device 0: nn.Linear(4096, 4096) on 16 tokens in bf16
// (T/N m=4096 n=16 k=4096) and the same GEMM in strict f32.
std::vector<GemmKey> cublaslt_test_keys();

// A search with only the cublaslt proposer on device 0 (round 0 only), its nodes printed as
// "node id verdict us (cuBLAS us) idea" and a summary line. `timing` skip makes it quick.
search::SearchOutcome cublaslt_search(const GemmKey& key, const std::string& cache_dir, eval::Timing timing);

}  // namespace kd::test
