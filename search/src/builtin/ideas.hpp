// The builtin idea catalogue: optimization ideas in words, each mapped to a parameter move of one
// family. The words are what the search tree records and `kdctl show` prints; they carry the
// numbers that motivate the move for the key at hand ("33 tiles cannot fill 132 SMs").
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "builtin/family.hpp"

namespace kd::builtin {

struct IdeaMove {
  std::string_view family;
  std::string_view id;  // stable short name, e.g. "bulk.kc_double"
  // The idea in words for this key and these parameters.
  std::string (*text)(const GemmKey& key, const Target& target, const Params& params);
  // The moved parameters (before Family::complete), or nullopt when the move does not apply
  // (already at a bound).
  std::optional<Params> (*apply)(const GemmKey& key, const Target& target, const Params& params);
};

std::span<const IdeaMove> idea_catalogue();

// Applies `move` to `params` and completes/validates the result for `family`; nullopt when the
// move does not apply or yields an invalid configuration.
std::optional<Params> apply_idea(const IdeaMove& move, const Family& family, const GemmKey& key,
                                 const Target& target, const Params& params);

}  // namespace kd::builtin
