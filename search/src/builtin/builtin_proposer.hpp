// The `builtin` proposer: template families (family.hpp) and the idea catalogue (ideas.hpp).
// The offline default: it needs no network and no model.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "builtin/family.hpp"
#include "driver/proposer.hpp"

namespace kd::builtin {

// The names a family list (kdctl search --family) may hold: the GEMM families' and row_reduce.
std::vector<std::string> builtin_family_names();
bool is_builtin_family(std::string_view name);

class BuiltinProposer final : public search::Proposer {
public:
  BuiltinProposer() = default;
  // Seeds only the listed families (is_builtin_family names; trial ones included), on every key they
  // do not reject: a developer measuring a family where its cost rules (Family::declines) pass it over.
  explicit BuiltinProposer(std::vector<std::string> only) : only_(std::move(only)) {}
  const std::vector<std::string>& only_families() const { return only_; }

  std::string_view name() const override { return "builtin"; }
  // Row-operator keys (issue 33) get the row_reduce family (row_family.hpp) and its moves.
  bool serves_row_operators() const override { return true; }
  std::vector<search::Proposal> seeds(const search::ProposalContext& ctx) override;
  std::vector<search::Idea> ideas(const search::ProposalContext& ctx, const search::Node& seed,
                                  int n) override;
  std::vector<search::Proposal> implement(const search::ProposalContext& ctx, const search::Node& seed,
                                          const search::Idea& idea, int b) override;

  // The round-0 seeds of a range search (search/src/range/range_search.hpp), which runs at the
  // range's last n (ctx.key): seeds() with the families that decline that exact key for padding
  // (Family::declines) added, in family order. One record for a whole range may be worth padding at
  // its low end; the range gate's timing at the range's ends decides.
  // With `only` (only_families()), the listed families that do not reject the key.
  static std::vector<search::Proposal> range_seeds(const search::ProposalContext& ctx,
                                                   std::span<const std::string> only = {});

  // A round-0 seed re-rendered for `key` from a cached winner's source of a nearby shape (its
  // "// kdispatch builtin family NAME: K=V ..." header), or nullopt when the source is not a
  // builtin family's or the family cannot serve `key`.
  static std::optional<search::Proposal> reseed(const GemmKey& key, const Target& target,
                                                const std::string& cached_source);

private:
  std::vector<std::string> only_;  // empty: every enabled family by its rules
};

// "KD_KC=1024 KD_ROWS=16" -> Params; nullopt when malformed.
std::optional<Params> parse_params(const std::string& text);

}  // namespace kd::builtin
