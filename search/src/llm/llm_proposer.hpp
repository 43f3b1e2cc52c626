// The LLM proposer's two steps for the branching search, plus the repair round:
//   propose_ideas  context -> up to n distinct optimization ideas
//   implement      one idea + a seed kernel -> up to b candidate sources, each checked statically
//   repair         one rejected candidate + its compile log -> one corrected candidate
// Every call returns a value: the reply's parts with their fates, or an LlmFailure whose fate the
// search records in its tree (tree_entry below). No search class is needed: the search fills a
// ProposerContext and reads plain results. Each step renders its prompt file for the context's
// operator class (ProposerContext::op: GEMM or row operators); the static checks are the same for
// both (the operator's argument struct is checked on the compiled kernel, CompileRequest::args_bytes).
// Thread-safe; calls share the job's TokenBudget.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "contract/candidate_checks.hpp"
#include "llm/llm_client.hpp"
#include "llm/proposer_context.hpp"

namespace kd::llm {

// What the tree stores about one reply that came back. Holds no key and no request headers.
struct ReplyRecord {
  std::string_view prompt;  // the prompt's versioned name, e.g. "implement.v1", "implement.row.v1"
  std::string model;
  int attempts = 0;
  TokenUsage usage;         // what the budget was charged
};

struct IdeasReply {
  std::vector<std::string> ideas;  // 1..n, distinct
  ReplyRecord record;
};

struct CandidateDraft {
  std::string source;
  ReplyFate fate = ReplyFate::ok;  // ok, truncated, no_plan or static_check_failed
  search::CandidateStatus status = search::CandidateStatus::ok;  // the contract checks' verdict
  std::string message;             // why it is not ok; empty when ok
  std::optional<LaunchPlan> plan;  // parsed by the static checks when fate == ok
};

struct Implementation {
  std::vector<CandidateDraft> candidates;  // 1..b, in reply order, each with its own fate
  ReplyRecord record;
};

struct Repaired {
  CandidateDraft candidate;
  ReplyRecord record;
};

struct ProposerOptions {
  search::SourceLimits source_limits;
  TreeLimits tree_limits;
  std::size_t max_log_chars = 6000;  // of a compile log sent back for repair (its start is kept)
};

class LlmProposer {
public:
  // Throws kd::Error (usage) as LlmClient's constructor (the key cannot be loaded safely).
  LlmProposer(LlmConfig config, std::shared_ptr<TokenBudget> budget, ProposerOptions options = {});

  // Fates of a failure: those of LlmClient::complete, plus no_ideas and truncated.
  // Throws kd::Error (usage) when n == 0.
  std::variant<IdeasReply, LlmFailure> propose_ideas(const ProposerContext& context, std::size_t n);

  // Fates of a failure: those of LlmClient::complete, plus no_code and truncated (no kernel at all).
  // Throws kd::Error (usage) when b == 0.
  std::variant<Implementation, LlmFailure> implement(std::string_view idea,
                                                     std::string_view seed_source,
                                                     const ProposerContext& context, std::size_t b);

  // One repair round for a candidate that failed to compile or failed the static checks: the log
  // (compile errors or the check's message) is fed back with the source. Fates as implement.
  std::variant<Repaired, LlmFailure> repair(std::string_view idea, std::string_view source,
                                            std::string_view compile_log,
                                            const ProposerContext& context);

  const LlmClient& client() const noexcept { return client_; }

private:
  struct Exchange;
  std::variant<Exchange, LlmFailure> ask(PromptId prompt, PromptOperator op, const PromptVars& vars);
  // ask() for a prompt whose reply must hold kernels (implement, repair): the exchange with its
  // kernels, or the failure of a reply without a usable one (logged as `what`'s).
  std::variant<Exchange, LlmFailure> ask_kernels(PromptId prompt, PromptOperator op, const PromptVars& vars,
                                                 std::string_view what);
  CandidateDraft check(std::string source, bool complete) const;

  LlmClient client_;
  ProposerOptions options_;
};

// The tree's view of one candidate or of a failed request, under `idea`.
TreeEntry tree_entry(std::string_view idea, const CandidateDraft& candidate);
TreeEntry tree_entry(std::string_view idea, const LlmFailure& failure);

}  // namespace kd::llm
