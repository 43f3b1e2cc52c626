#include "driver/proposer_list.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace kd::search {
namespace {

constexpr std::array<ProposerInfo, 3> kProposers{{
    {ProposerName::builtin, "builtin", "kernel template families and the idea catalogue (offline)"},
    {ProposerName::llm, "llm", "an OpenAI-compatible or Anthropic model writes ideas and kernels"},
    {ProposerName::cublaslt, "cublaslt", "cuBLASLt's heuristic algorithms and split-K variants (needs a GPU)"},
}};

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const ProposerInfo> proposer_table() { return kProposers; }

std::string_view to_string(ProposerName name) {
  for (const ProposerInfo& p : kProposers)
    if (p.name == name) return p.text;
  return "unknown";
}

std::string proposer_names() {
  std::string out;
  for (const ProposerInfo& p : kProposers) out += (out.empty() ? "" : ", ") + std::string(p.text);
  return out;
}

std::variant<std::vector<ProposerName>, std::string> parse_proposer_list(std::string_view text) {
  if (trim(text).empty()) return fmt::format("no proposer given (known: {})", proposer_names());
  std::vector<ProposerName> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) return fmt::format("empty proposer name in '{}'", text);
    const auto known = std::find_if(kProposers.begin(), kProposers.end(),
                                    [&](const ProposerInfo& p) { return p.text == item; });
    if (known == kProposers.end()) return fmt::format("unknown proposer '{}' (known: {})", item, proposer_names());
    if (std::find(out.begin(), out.end(), known->name) != out.end())
      return fmt::format("proposer '{}' is given twice", item);
    out.push_back(known->name);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace kd::search
