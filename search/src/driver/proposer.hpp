// The proposer interface every idea source implements: builtin templates, cuBLASLt algorithms,
// an LLM. A proposer writes round-0 seeds, then for a seed node the ideas it would try (in words,
// conditioned on the tree so far) and implementations of one idea. Proposers never compile or run
// anything; the search driver does.
//
// A proposal is either a kernel source (compiled, then evaluated) or a cuBLASLt algorithm
// (Proposal::cublaslt: evaluated as is, never compiled). cuBLASLt algorithms come from the GPU, so
// the driver lends proposers an AlgoSource (the worker) in ProposalContext::algos; it is null in a
// dry run.
//
// This header and the rest of driver/ name no particular proposer or family: the proposer table
// (proposer_table.cpp) is the one place that knows them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "driver/gpu_target.hpp"
#include "eval/cublaslt_enumeration.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "tree/search_tree.hpp"

namespace kd::search {

// Where the cuBLASLt algorithms of a key come from: the evaluation worker (WorkerBackend).
class AlgoSource {
public:
  virtual ~AlgoSource() = default;
  // The enumeration, or why there is none (no cuBLASLt, a worker that died). Never throws.
  virtual std::variant<cublaslt::Enumeration, std::string> cublaslt_algos(
      const GemmKey& key, const cublaslt::EnumerationOptions& options) = 0;
};

// What a proposer knows of the search. In a row-operator search (issue 33) `row` is the key and
// `key` an empty GemmKey that names nothing: only proposers that serve row operators
// (Proposer::serves_row_operators) are asked, and they read `row`.
struct ProposalContext {
  const GemmKey& key;
  const GpuTarget& target;
  const SearchTree& tree;
  double floor_us = 0;     // roofline floor for the key on this GPU (0: unknown)
  double baseline_us = 0;  // vendor library's median so far (0: unknown)
  double bandwidth_gb_per_s = 0;  // measured on this GPU (0: unknown)
  double peak_tflop_per_s = 0;    // for the key's arithmetic (0: unknown)
  AlgoSource* algos = nullptr;    // null: nothing can run on a GPU (a dry run)
  const RowKey* row = nullptr;    // set: a row-operator search, and `key` is meaningless
};

struct Idea {
  std::string text;    // what the tree records and kdctl shows
  std::string handle;  // proposer-private (the builtin catalogue's move id)
};

struct Proposal {
  std::string proposer;
  std::string family;  // builtin family, empty otherwise
  std::string idea;
  std::string params;  // builtin parameters in words, empty otherwise
  std::string source;  // a complete candidate under the kernel contract (empty for cublaslt)
  int parent = -1;
  // Non-empty when the proposer's reply produced no usable source (an LLM reply with no code, a
  // truncated or timed-out request): the tree records the fate, nothing is compiled.
  std::string fate;
  std::string fate_detail;
  // Set: the candidate is this cuBLASLt algorithm, not a source.
  std::optional<CublasLtAlgo> cublaslt;
};

class Proposer {
public:
  virtual ~Proposer() = default;
  virtual std::string_view name() const = 0;
  // Whether this proposer has candidates for row-operator keys (rmsnorm, layernorm, softmax). The
  // driver asks one that does not only in GEMM searches, so GEMM-only proposers never see a row
  // context.
  virtual bool serves_row_operators() const { return false; }
  virtual std::vector<Proposal> seeds(const ProposalContext& ctx) = 0;
  // Up to `n` distinct ideas for improving `seed`, none already tried on it. Empty when this
  // proposer has nothing for this seed (e.g. the builtin proposer on an LLM-written kernel).
  virtual std::vector<Idea> ideas(const ProposalContext& ctx, const Node& seed, int n) = 0;
  // Up to `b` implementations of `idea` applied to `seed`.
  virtual std::vector<Proposal> implement(const ProposalContext& ctx, const Node& seed,
                                          const Idea& idea, int b) = 0;
  // One repair of `failed`, whose compile log is `log`; nullopt when this proposer does not
  // repair (the builtin templates always compile).
  virtual std::optional<Proposal> repair(const ProposalContext&, const Proposal& /*failed*/,
                                         const std::string& /*log*/) {
    return std::nullopt;
  }
};

}  // namespace kd::search
