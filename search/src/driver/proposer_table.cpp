#include "driver/proposer_table.hpp"

#include <algorithm>
#include <array>
#include <exception>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "builtin/builtin_proposer.hpp"
#include "cublaslt_proposer/cublaslt_proposer.hpp"
#include "llm/search_adapter.hpp"

namespace kd::search {
namespace {

MadeProposer make_builtin(const ProposerSettings& s) {
  for (const std::string& name : s.builtin_families)
    if (!builtin::is_builtin_family(name))
      return fmt::format("builtin family '{}' is unknown; the builtin families: {} (--family)", name,
                         fmt::join(builtin::builtin_family_names(), ", "));
  return std::make_unique<builtin::BuiltinProposer>(s.builtin_families);
}

MadeProposer make_cublaslt(const ProposerSettings&) { return std::make_unique<cublaslt::CublasLtProposer>(); }

MadeProposer make_llm(const ProposerSettings& s) {
  const auto api = llm::api_kind_from_string(s.llm_api);
  if (!api) return fmt::format("llm_api '{}' is unknown: use openai or anthropic (KD_LLM_API, --llm-api)", s.llm_api);
  if (s.llm_model.empty()) return std::string("llm_model is not set: name the model (KD_LLM_MODEL, --llm-model)");
  llm::LlmConfig c;
  c.api = *api;
  c.base_url = s.llm_url;
  c.model = s.llm_model;
  if (!s.llm_key_file.empty()) c.key = llm::KeyFromFile{s.llm_key_file};
  else if (!s.llm_key_env.empty()) c.key = llm::KeyFromEnv{s.llm_key_env};
  const auto tokens = s.llm_tokens != 0 ? static_cast<std::int64_t>(s.llm_tokens) : llm::TokenBudget::kUnlimited;
  try {
    return std::make_unique<llm::LlmSearchProposer>(c, std::make_shared<llm::TokenBudget>(tokens));
  } catch (const std::exception& e) {  // the key file or variable cannot be used (LlmClient)
    return std::string(e.what());
  }
}

constexpr std::array<ProposerInfo, 3> kProposers{{
    {ProposerName::builtin, "builtin", "kernel template families and the idea catalogue (offline)", make_builtin},
    {ProposerName::llm, "llm", "an OpenAI-compatible or Anthropic model writes ideas and kernels", make_llm},
    {ProposerName::cublaslt, "cublaslt", "cuBLASLt's heuristic algorithms and split-K variants (needs a GPU)",
     make_cublaslt},
}};

const ProposerInfo& info_of(ProposerName name) {
  for (const ProposerInfo& p : kProposers)
    if (p.name == name) return p;
  return kProposers.front();  // unreachable: every enumerator has its row
}

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The items of a comma list, each trimmed (an empty one stays, for the caller to refuse).
std::vector<std::string_view> list_items(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    out.push_back(trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

std::span<const ProposerInfo> proposer_table() { return kProposers; }

std::string_view to_string(ProposerName name) { return info_of(name).text; }

std::string proposer_names() {
  std::string out;
  for (const ProposerInfo& p : kProposers) out += (out.empty() ? "" : ", ") + std::string(p.text);
  return out;
}

std::variant<std::vector<ProposerName>, std::string> parse_proposer_list(std::string_view text) {
  if (trim(text).empty()) return fmt::format("no proposer given (known: {})", proposer_names());
  std::vector<ProposerName> out;
  for (const std::string_view item : list_items(text)) {
    if (item.empty()) return fmt::format("empty proposer name in '{}'", text);
    const auto known = std::find_if(kProposers.begin(), kProposers.end(),
                                    [&](const ProposerInfo& p) { return p.text == item; });
    if (known == kProposers.end()) return fmt::format("unknown proposer '{}' (known: {})", item, proposer_names());
    if (std::find(out.begin(), out.end(), known->name) != out.end())
      return fmt::format("proposer '{}' is given twice", item);
    out.push_back(known->name);
  }
  return out;
}

std::variant<std::vector<std::string>, std::string> parse_family_list(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (const std::string_view item : list_items(text)) {
    if (item.empty()) return fmt::format("an empty family name in '{}'", text);
    out.emplace_back(item);
  }
  return out;
}

std::variant<std::vector<std::unique_ptr<Proposer>>, std::string> make_proposers(
    std::span<const ProposerName> names, const ProposerSettings& settings) {
  std::vector<std::unique_ptr<Proposer>> out;
  for (const ProposerName name : names) {
    const ProposerInfo& info = info_of(name);
    MadeProposer made = info.make(settings);
    if (auto* why = std::get_if<std::string>(&made)) return fmt::format("proposer {}: {}", info.text, *why);
    out.push_back(std::move(std::get<std::unique_ptr<Proposer>>(made)));
  }
  return out;
}

}  // namespace kd::search
