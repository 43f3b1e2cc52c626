#include "cublaslt_proposer/cublaslt_proposer.hpp"

#include <fmt/format.h>

namespace kd::cublaslt {
namespace {

search::Proposal fate(std::string name, std::string detail) {
  search::Proposal p;
  p.proposer = "cublaslt";
  p.idea = "cuBLASLt algorithms";
  p.fate = std::move(name);
  p.fate_detail = std::move(detail);
  return p;
}

}  // namespace

std::string idea_text(const AlgoCandidate& c) {
  std::string out = fmt::format("cuBLASLt {}: {}", c.origin, c.description);
  if (c.waves > 0) out += fmt::format(" (waves {:.2f})", c.waves);
  if (c.algo.workspace_bytes > 0) out += fmt::format(" workspace {} KiB", (c.algo.workspace_bytes + 1023) / 1024);
  return out;
}

std::vector<search::Proposal> CublasLtProposer::seeds(const search::ProposalContext& ctx) {
  if (ctx.key.epilogue == Epilogue::bias) {
    return {fate("not_proposed",
                 "cublaslt does not propose epilogue=bias keys: the bias pointer is a per-call attribute of "
                 "the cuBLASLt matmul descriptor, which an application's threads share")};
  }
  if (ctx.algos == nullptr) {
    return {fate("needs_gpu",
                 "cublaslt enumeration needs a GPU: cuBLASLt algorithms are enumerated by the evaluation "
                 "worker, and this run (a dry run) starts none")};
  }
  auto result = ctx.algos->cublaslt_algos(ctx.key, options_);
  if (const std::string* error = std::get_if<std::string>(&result)) return {fate("enumeration_failed", *error)};
  const Enumeration& e = std::get<Enumeration>(result);
  if (e.algos.empty())
    return {fate("no_algorithm", fmt::format("cuBLASLt {} has no algorithm for this key", e.version))};
  std::vector<search::Proposal> out;
  for (const AlgoCandidate& c : e.algos) {
    search::Proposal p;
    p.proposer = "cublaslt";
    p.idea = idea_text(c);
    p.params = c.description;
    p.cublaslt = c.algo;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kd::cublaslt
