#include "llm/search_adapter.hpp"

#include <fmt/format.h>

#include "llm/operator_context.hpp"

namespace kd::llm {

LlmSearchProposer::LlmSearchProposer(LlmConfig config, std::shared_ptr<TokenBudget> budget)
    : budget_(budget ? std::move(budget) : std::make_shared<TokenBudget>()),
      proposer_(std::move(config), budget_) {}

ProposerContext LlmSearchProposer::context_for(const search::ProposalContext& ctx) {
  // A row search lends an empty `key`: only `row` names the operator there.
  ProposerContext c = ctx.row != nullptr ? operator_context(*ctx.row) : operator_context(ctx.key);
  c.gpu = {ctx.target.arch, ctx.target.sms, ctx.bandwidth_gb_per_s, ctx.peak_tflop_per_s};
  c.roofline_floor_us = ctx.floor_us;
  if (ctx.baseline_us > 0) c.baseline_time_us = ctx.baseline_us;
  for (const search::Node& n : ctx.tree.nodes()) {
    TreeEntry e{n.idea, n.verdict, std::nullopt, {}};
    if (n.candidate_us > 0) e.time_us = n.candidate_us;
    if (n.verdict == "compile_failed") {
      e.compile_error_excerpt = n.compile_log.empty() ? n.detail : n.compile_log;
    } else if (!n.correct() && n.verdict != "not_evaluated" && !n.verdict.empty()) {
      e.gate_detail = n.detail;  // wrong_result, guard_band_overwritten, ...: the gate's reason
    }
    c.tree.push_back(std::move(e));
  }
  return c;
}

std::vector<search::Idea> LlmSearchProposer::ideas(const search::ProposalContext& ctx,
                                                   const search::Node& seed, int n) {
  if (seed.source.empty() || n <= 0) return {};
  auto reply = proposer_.propose_ideas(context_for(ctx), static_cast<std::size_t>(n));
  if (auto* f = std::get_if<LlmFailure>(&reply)) {
    failures_.push_back(fmt::format("{}: {}", to_string(f->fate), f->message));
    return {};
  }
  std::vector<search::Idea> out;
  for (std::string& text : std::get<IdeasReply>(reply).ideas) {
    if (!ctx.tree.tried(seed.id, text)) out.push_back({std::move(text), {}});
  }
  return out;
}

std::vector<search::Proposal> LlmSearchProposer::implement(const search::ProposalContext& ctx,
                                                           const search::Node& seed,
                                                           const search::Idea& idea, int b) {
  if (b <= 0) return {};
  auto reply = proposer_.implement(idea.text, seed.source, context_for(ctx), static_cast<std::size_t>(b));
  std::vector<search::Proposal> out;
  if (auto* f = std::get_if<LlmFailure>(&reply)) {
    search::Proposal p{"llm", {}, idea.text, {}, {}, seed.id, std::string(to_string(f->fate)), f->message};
    out.push_back(std::move(p));
    return out;
  }
  for (CandidateDraft& d : std::get<Implementation>(reply).candidates) {
    search::Proposal p{"llm", {}, idea.text, {}, std::move(d.source), seed.id, {}, {}};
    if (d.fate != ReplyFate::ok) {
      p.fate = std::string(to_string(d.fate));
      p.fate_detail = d.message;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<search::Proposal> LlmSearchProposer::repair(const search::ProposalContext& ctx,
                                                          const search::Proposal& failed,
                                                          const std::string& log) {
  if (failed.source.empty()) return std::nullopt;
  auto reply = proposer_.repair(failed.idea, failed.source, log, context_for(ctx));
  if (auto* f = std::get_if<LlmFailure>(&reply)) {
    failures_.push_back(fmt::format("repair {}: {}", to_string(f->fate), f->message));
    return std::nullopt;
  }
  CandidateDraft& d = std::get<Repaired>(reply).candidate;
  search::Proposal p{"llm", {}, failed.idea, {}, std::move(d.source), failed.parent, {}, {}};
  if (d.fate != ReplyFate::ok) {
    p.fate = std::string(to_string(d.fate));
    p.fate_detail = d.message;
  }
  return p;
}

}  // namespace kd::llm
