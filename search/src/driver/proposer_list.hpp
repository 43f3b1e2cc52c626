// The proposers a search can use, in one table, and the comma-separated selection that
// `kdctl search --proposer`, the daemon's `proposer` setting and a job's proposer field give
// ("builtin", "builtin,cublaslt", "builtin,llm,cublaslt").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kd::search {

enum class ProposerName : std::uint8_t { builtin, llm, cublaslt };

struct ProposerInfo {
  ProposerName name;
  std::string_view text;
  std::string_view what;  // one line for --help and docs
};
std::span<const ProposerInfo> proposer_table();
std::string_view to_string(ProposerName name);

// The names in the order given. Blanks around names are ignored. Errors name the problem: an
// empty selection, an empty item ("builtin,"), an unknown name (listing the known ones), a name
// given twice.
std::variant<std::vector<ProposerName>, std::string> parse_proposer_list(std::string_view text);

// "builtin, llm, cublaslt": the known names, for messages.
std::string proposer_names();

}  // namespace kd::search
