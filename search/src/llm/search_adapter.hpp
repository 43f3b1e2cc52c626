// The `llm` proposer as the search sees it: LlmProposer (ideas, implementations, one repair)
// behind the search's Proposer interface. It writes no round-0 seeds: it improves the tree's best
// nodes, builtin or its own, so builtin, cuBLASLt and LLM candidates feed one another. It serves
// GEMM and row-operator keys alike (issue 33): the context's operator part picks the prompt files
// and contract (llm/operator_context.hpp), and a row search's seeds are builtin row_reduce kernels.
#pragma once

#include <memory>

#include "driver/proposer.hpp"
#include "llm/llm_proposer.hpp"
#include "llm/token_budget.hpp"

namespace kd::llm {

class LlmSearchProposer final : public search::Proposer {
public:
  // Throws kd::Error (usage) when the key cannot be loaded safely (see LlmClient).
  LlmSearchProposer(LlmConfig config, std::shared_ptr<TokenBudget> budget);

  std::string_view name() const override { return "llm"; }
  bool serves_row_operators() const override { return true; }
  std::vector<search::Proposal> seeds(const search::ProposalContext&) override { return {}; }
  std::vector<search::Idea> ideas(const search::ProposalContext& ctx, const search::Node& seed, int n) override;
  std::vector<search::Proposal> implement(const search::ProposalContext& ctx, const search::Node& seed,
                                          const search::Idea& idea, int b) override;
  std::optional<search::Proposal> repair(const search::ProposalContext& ctx, const search::Proposal& failed,
                                         const std::string& log) override;

  // Replies that produced nothing the tree can hold as a node (an ideas request that failed),
  // in order, "fate: message".
  const std::vector<std::string>& failures() const noexcept { return failures_; }
  const TokenBudget& budget() const noexcept { return *budget_; }

  // The model's view of the search state (exposed for tests): the operator part of ctx.row when
  // set (ctx.key names nothing then), else of ctx.key, with the GPU, roofline, baseline and tree.
  static ProposerContext context_for(const search::ProposalContext& ctx);

private:
  std::shared_ptr<TokenBudget> budget_;
  LlmProposer proposer_;
  std::vector<std::string> failures_;
};

}  // namespace kd::llm
