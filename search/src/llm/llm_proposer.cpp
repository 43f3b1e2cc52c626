#include "llm/llm_proposer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "llm/reply_parser.hpp"

namespace kd::llm {

struct LlmProposer::Exchange {
  ChatReply reply;
  ReplyRecord record;
  std::vector<KernelText> kernels;  // ask_kernels only
};

LlmProposer::LlmProposer(LlmConfig config, std::shared_ptr<TokenBudget> budget,
                         ProposerOptions options)
    : client_(std::move(config), std::move(budget)), options_(std::move(options)) {}

std::variant<LlmProposer::Exchange, LlmFailure> LlmProposer::ask(PromptId prompt, PromptOperator op,
                                                                 const PromptVars& vars) {
  const RenderedPrompt rendered = render_prompt(prompt, op, vars);
  const ChatRequest request{rendered.system, rendered.user, client_.config().max_reply_tokens,
                            client_.config().temperature};
  auto outcome = client_.complete(request);
  if (auto* failure = std::get_if<LlmFailure>(&outcome)) return std::move(*failure);
  auto& reply = std::get<ChatReply>(outcome);
  ReplyRecord record{rendered.name, reply.model, reply.attempts, reply.charged};
  return Exchange{std::move(reply), std::move(record), {}};
}

std::variant<LlmProposer::Exchange, LlmFailure> LlmProposer::ask_kernels(PromptId prompt, PromptOperator op,
                                                                         const PromptVars& vars,
                                                                         std::string_view what) {
  auto asked = ask(prompt, op, vars);
  if (auto* failure = std::get_if<LlmFailure>(&asked)) return std::move(*failure);
  auto& exchange = std::get<Exchange>(asked);
  auto kernels = extract_kernels(exchange.reply.text, exchange.reply.finish);
  if (auto* bad = std::get_if<ParseFailure>(&kernels)) {
    spdlog::warn("llm: {} reply rejected: {}: {}", what, to_string(bad->fate), bad->message);
    return LlmFailure{bad->fate, bad->message, exchange.record.attempts, exchange.record.usage};
  }
  exchange.kernels = std::get<std::vector<KernelText>>(std::move(kernels));
  return std::move(exchange);
}

CandidateDraft LlmProposer::check(std::string source, bool complete) const {
  CandidateDraft draft;
  draft.source = std::move(source);
  if (!complete) {
    draft.fate = ReplyFate::truncated;
    draft.message = "kernel cut off at max_tokens";
    return draft;
  }
  auto checked = search::check_source(draft.source, options_.source_limits);
  if (auto* rejection = std::get_if<search::Rejection>(&checked)) {
    draft.status = rejection->status;
    draft.fate = rejection->status == search::CandidateStatus::no_plan ? ReplyFate::no_plan
                                                                       : ReplyFate::static_check_failed;
    draft.message = client_.redact(rejection->message);
    return draft;
  }
  draft.plan = std::get<LaunchPlan>(std::move(checked));
  return draft;
}

std::variant<IdeasReply, LlmFailure> LlmProposer::propose_ideas(const ProposerContext& context,
                                                                std::size_t n) {
  if (n == 0) throw Error(ErrorDomain::usage, 0, "llm: propose_ideas needs n >= 1");
  PromptVars vars = context_vars(context, options_.tree_limits);
  vars["n"] = std::to_string(n);
  auto asked = ask(PromptId::ideas, context.op, vars);
  if (auto* failure = std::get_if<LlmFailure>(&asked)) return std::move(*failure);
  auto& exchange = std::get<Exchange>(asked);
  auto parsed = parse_ideas(exchange.reply.text, exchange.reply.finish, n);
  if (auto* bad = std::get_if<ParseFailure>(&parsed)) {
    spdlog::warn("llm: ideas reply rejected: {}: {}", to_string(bad->fate), bad->message);
    return LlmFailure{bad->fate, bad->message, exchange.record.attempts, exchange.record.usage};
  }
  return IdeasReply{std::get<std::vector<std::string>>(std::move(parsed)), std::move(exchange.record)};
}

std::variant<Implementation, LlmFailure> LlmProposer::implement(std::string_view idea,
                                                                std::string_view seed_source,
                                                                const ProposerContext& context,
                                                                std::size_t b) {
  if (b == 0) throw Error(ErrorDomain::usage, 0, "llm: implement needs b >= 1");
  PromptVars vars = context_vars(context, options_.tree_limits);
  vars["idea"] = std::string(idea);
  vars["seed_source"] = std::string(seed_source);
  vars["b"] = std::to_string(b);
  auto asked = ask_kernels(PromptId::implement, context.op, vars, "implementation");
  if (auto* failure = std::get_if<LlmFailure>(&asked)) return std::move(*failure);
  auto& exchange = std::get<Exchange>(asked);
  auto& texts = exchange.kernels;
  if (texts.size() > b) {
    spdlog::info("llm: reply holds {} kernels, {} asked for: the first {} are kept", texts.size(), b, b);
    texts.resize(b);
  }
  Implementation out{{}, std::move(exchange.record)};
  for (KernelText& text : texts) out.candidates.push_back(check(std::move(text.source), text.complete));
  return out;
}

std::variant<Repaired, LlmFailure> LlmProposer::repair(std::string_view idea,
                                                       std::string_view source,
                                                       std::string_view compile_log,
                                                       const ProposerContext& context) {
  PromptVars vars = context_vars(context, options_.tree_limits);
  vars["idea"] = std::string(idea);
  vars["source"] = std::string(source);
  std::string log(compile_log.substr(0, options_.max_log_chars));
  if (compile_log.size() > options_.max_log_chars) log += "\n[... log shortened]";
  vars["compile_log"] = std::move(log);
  auto asked = ask_kernels(PromptId::repair, context.op, vars, "repair");
  if (auto* failure = std::get_if<LlmFailure>(&asked)) return std::move(*failure);
  auto& exchange = std::get<Exchange>(asked);
  auto& first = exchange.kernels.front();
  return Repaired{check(std::move(first.source), first.complete), std::move(exchange.record)};
}

TreeEntry tree_entry(std::string_view idea, const CandidateDraft& candidate) {
  TreeEntry entry;
  entry.idea = std::string(idea);
  entry.verdict = candidate.fate == ReplyFate::static_check_failed
                      ? std::string(search::to_string(candidate.status))
                      : std::string(to_string(candidate.fate));
  entry.compile_error_excerpt = candidate.message;
  return entry;
}

TreeEntry tree_entry(std::string_view idea, const LlmFailure& failure) {
  return TreeEntry{std::string(idea), std::string(to_string(failure.fate)), std::nullopt,
                   failure.message};
}

}  // namespace kd::llm
