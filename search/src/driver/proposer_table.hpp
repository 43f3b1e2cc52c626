// The proposers a search can use, in one table that names and builds them, and the
// comma-separated selection that `kdctl search --proposer`, the daemon's `proposer` setting and a
// job's proposer field give ("builtin", "builtin,cublaslt", "builtin,llm,cublaslt"). The daemon's
// search runner and kdctl search build their proposers here and nowhere else; adding a proposer
// is one row in proposer_table.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "driver/proposer.hpp"

namespace kd::search {

enum class ProposerName : std::uint8_t { builtin, llm, cublaslt };

// What building a proposer may need. The texts are those of kdispatchd's configuration keys of
// the same names (llm_api, llm_url, ...), which kdctl search reads as well.
struct ProposerSettings {
  std::string llm_api = "openai";  // openai | anthropic
  std::string llm_url = "http://127.0.0.1:8000";
  std::string llm_model;     // empty: the llm proposer cannot be built
  std::string llm_key_env;   // environment variable holding the API key
  std::string llm_key_file;  // or a file (mode 0600/0400, owned by the caller)
  std::uint64_t llm_tokens = 0;  // this search's LLM token budget; 0: unlimited
  // The builtin families to seed (kdctl search --family): empty, every enabled family by its rules;
  // otherwise only these, on every key they do not reject (their cost-based declines set aside).
  std::vector<std::string> builtin_families;
};

// A built proposer, or why it cannot be built (a user's configuration problem, in words that
// name the setting: "llm_model is not set (KD_LLM_MODEL, --llm-model)").
using MadeProposer = std::variant<std::unique_ptr<Proposer>, std::string>;

struct ProposerInfo {
  ProposerName name;
  std::string_view text;
  std::string_view what;  // one line for --help and docs
  MadeProposer (*make)(const ProposerSettings& settings);
};
std::span<const ProposerInfo> proposer_table();
std::string_view to_string(ProposerName name);

// The names in the order given. Blanks around names are ignored. Errors name the problem: an
// empty selection, an empty item ("builtin,"), an unknown name (listing the known ones), a name
// given twice.
std::variant<std::vector<ProposerName>, std::string> parse_proposer_list(std::string_view text);
// kdctl search --family's comma list (ProposerSettings::builtin_families; empty text: none); an empty
// item is an error. make_proposers checks the names.
std::variant<std::vector<std::string>, std::string> parse_family_list(std::string_view text);

// "builtin, llm, cublaslt": the known names, for messages.
std::string proposer_names();

// Builds the proposers of `names` in order. The error is "proposer NAME: why" for the first that
// cannot be built. Never throws for a configuration problem (beyond std::bad_alloc).
std::variant<std::vector<std::unique_ptr<Proposer>>, std::string> make_proposers(
    std::span<const ProposerName> names, const ProposerSettings& settings);

}  // namespace kd::search
