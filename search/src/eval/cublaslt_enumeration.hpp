// What cuBLASLt offers for a key: the top N algorithms of cublasLtMatmulAlgoGetHeuristic, plus
// split-K variants (CUBLASLT_ALGO_CONFIG_SPLITK_NUM with each reduction scheme the algorithm
// supports) of the best few distinct configurations among them, each checked with
// cublasLtMatmulAlgoCheck, deduplicated by their bytes. "Distinct" is by algorithm id, tile,
// stages, cluster shape and custom option, not by id alone: on Hopper every heuristic answer for a
// key tends to share one id (measured on an H200: all of bf16's were algo 66, all of f32's algo 55)
// and differ in tile and cluster. Runs where the GPU is: kdispatch-worker calls it (through the
// Evaluator) for the `enumerate_cublaslt` request; the search sees the result through AlgoSource.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cublaslt/algo.hpp"
#include "key/gemm_key.hpp"

namespace kd::cublaslt {

struct EnumerationOptions {
  int heuristics = 16;    // top N asked of cublasLtMatmulAlgoGetHeuristic
  int splitk_algos = 3;   // split-K variants of this many best distinct configurations
  std::vector<int> splits{2, 4, 8, 16};  // split counts tried (each leaves >= kMinSplitDepth of k)
  int max_candidates = 32;               // heuristic results first, then split-K variants
  std::uint64_t max_workspace_bytes = 32ull << 20;
  bool operator==(const EnumerationOptions&) const = default;
};

// k / splits below this is not tried: a split-K slice shallower than this is all reduction.
inline constexpr std::int64_t kMinSplitDepth = 64;

struct AlgoCandidate {
  CublasLtAlgo algo;
  std::string description;  // cublaslt/algo.hpp describe(): "algo 21 tile 128x64 stages ..."
  std::string origin;       // "heuristic #1", "split-K 4 of heuristic #1"
  float waves = 0;          // the heuristic's wavesCount (device utilization), 0 when unknown
  bool operator==(const AlgoCandidate&) const = default;
};

struct Enumeration {
  int version = 0;  // cublasLtGetVersion() of the library that enumerated (also in every algo)
  std::vector<AlgoCandidate> algos;
  bool operator==(const Enumeration&) const = default;
};

// Enumerates for `key` on the current context's device. Output reduction schemes are tried only
// when an algorithm supports no other (they round partial sums to C's type: below most precision
// classes). Throws kd::Error (cuda) when cuBLASLt is unavailable or refuses the descriptors; an
// algorithm that fails its check is skipped, not an error. An empty list is a valid answer.
Enumeration enumerate_algos(const GemmKey& key, const EnumerationOptions& options);

}  // namespace kd::cublaslt
