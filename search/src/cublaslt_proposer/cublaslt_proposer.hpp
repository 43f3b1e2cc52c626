// The `cublaslt` proposer: cuBLASLt's own algorithms as round-0 candidates. A one-shot
// enumeration (eval/cublaslt_enumeration.hpp, run by the worker through ProposalContext::algos):
// the heuristic's top algorithms and split-K variants, each a proposal carrying the algorithm
// itself (Proposal::cublaslt) with its configuration as the idea text ("cuBLASLt heuristic #2:
// algo 21 tile 128x64 stages 64x3"). No ideas or implementations after round 0: an algorithm has
// no source to change. Winners are stored as RecordKind::cublaslt_algo records with the cuBLASLt
// version they came from.
//
// When it cannot enumerate, its one seed is a proposal with a fate (the tree says why, nothing
// runs): needs_gpu (no AlgoSource: a dry run), enumeration_failed (the worker's error),
// no_algorithm (cuBLASLt has none for the key), not_proposed (epilogue=bias keys: the bias pointer
// is a per-call attribute of the matmul descriptor that applications share between threads; see
// libdispatch/src/launch/cublaslt_entry.hpp).
#pragma once

#include "driver/proposer.hpp"
#include "eval/cublaslt_enumeration.hpp"

namespace kd::cublaslt {

class CublasLtProposer final : public search::Proposer {
public:
  explicit CublasLtProposer(EnumerationOptions options = {}) : options_(std::move(options)) {}

  std::string_view name() const override { return "cublaslt"; }
  std::vector<search::Proposal> seeds(const search::ProposalContext& ctx) override;
  std::vector<search::Idea> ideas(const search::ProposalContext&, const search::Node&, int) override { return {}; }
  std::vector<search::Proposal> implement(const search::ProposalContext&, const search::Node&,
                                          const search::Idea&, int) override {
    return {};
  }

private:
  EnumerationOptions options_;
};

// The idea text of an enumerated algorithm.
std::string idea_text(const AlgoCandidate& c);

}  // namespace kd::cublaslt
