#include "builtin/builtin_proposer.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "builtin/ideas.hpp"
#include "builtin/row_family.hpp"

namespace kd::builtin {
namespace {

long long blocks_of(const LaunchPlan& plan) {
  long long total = 0;
  for (const LaunchSpec& s : plan.launches)
    total = std::max(total, static_cast<long long>(s.grid[0]) * s.grid[1] * s.grid[2]);
  return total;
}

search::Proposal make(const Family& f, const GemmKey& key, const Target& t, const Params& p,
                      std::string idea, int parent) {
  return {"builtin", std::string(f.name), std::move(idea), describe(p), render(f, key, t, p), parent};
}

// Appends the valid seeds of `f` for ctx.key to `out`.
void add_seeds(const Family& f, const search::ProposalContext& ctx, std::vector<search::Proposal>& out) {
  for (const Params& raw : f.seeds(ctx.key, ctx.target)) {
    Params p = f.complete(ctx.key, ctx.target, raw);
    if (!f.valid(ctx.key, ctx.target, p)) continue;
    // Servers replay calls back to back in CUDA graphs: seed the overlap with the previous kernel.
    if (f.pdl_first && ctx.target.cc_major >= 9 && !p.contains("KD_PDL")) p["KD_PDL"] = 1;
    out.push_back(make(f, ctx.key, ctx.target, p, fmt::format("seed: {} defaults for this shape", f.name), -1));
  }
}

search::Proposal make_row(const RowKey& key, const Target& t, const Params& p, std::string idea, int parent) {
  return {"builtin", std::string(kRowFamilyName), std::move(idea), describe(p), row_render(key, t, p), parent};
}

// Measured context steers the order of moves: a grid that leaves SMs idle tries moves that add
// blocks first; a grid that fills them tries the others first.
int score_move(long long blocks, long long moved_blocks, const Target& t) {
  int score = 0;
  if (blocks < t.sms && moved_blocks > blocks) score += 2;
  if (blocks >= 2LL * t.sms && moved_blocks < blocks) score += 1;
  return score;
}

struct Scored {
  int score;
  search::Idea idea;
};

std::vector<search::Idea> best_ideas(std::vector<Scored> scored, int n) {
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  std::vector<search::Idea> out;
  for (auto& s : scored) {
    if (static_cast<int>(out.size()) >= n) break;
    out.push_back(std::move(s.idea));
  }
  return out;
}

std::string row_move_text(const RowMove& move, const Params& moved) {
  return fmt::format("{} ({})", move.words, describe(moved));
}

std::vector<search::Proposal> row_seed_proposals(const search::ProposalContext& ctx) {
  std::vector<search::Proposal> out;
  const RowKey& key = *ctx.row;
  if (row_rejects(key)) return out;
  for (const Params& raw : row_seeds(key, ctx.target)) {
    const Params p = row_complete(key, ctx.target, raw);
    if (row_valid(key, ctx.target, p))
      out.push_back(make_row(key, ctx.target, p, fmt::format("seed: {} defaults for this shape", kRowFamilyName), -1));
  }
  return out;
}

std::vector<search::Idea> row_ideas(const search::ProposalContext& ctx, const search::Node& seed, int n) {
  const std::optional<Params> params = parse_params(seed.params);
  if (seed.proposer != "builtin" || seed.family != kRowFamilyName || !params) return {};
  const RowKey& key = *ctx.row;
  if (!row_valid(key, ctx.target, *params)) return {};
  const long long blocks = blocks_of(row_plan(key, ctx.target, *params));
  std::vector<Scored> scored;
  for (const RowMove& move : row_moves()) {
    const std::optional<Params> moved = apply_row_move(move, key, ctx.target, *params);
    if (!moved) continue;
    std::string text = row_move_text(move, *moved);
    if (ctx.tree.tried(seed.id, text)) continue;
    if (ctx.tree.has_source(search::source_hash(row_render(key, ctx.target, *moved)))) continue;
    const long long moved_blocks = blocks_of(row_plan(key, ctx.target, *moved));
    scored.push_back({score_move(blocks, moved_blocks, ctx.target), {std::move(text), std::string(move.id)}});
  }
  return best_ideas(std::move(scored), n);
}

std::vector<search::Proposal> row_implement(const search::ProposalContext& ctx, const search::Node& seed,
                                            const search::Idea& idea, int b) {
  const std::optional<Params> params = parse_params(seed.params);
  if (seed.family != kRowFamilyName || !params) return {};
  const RowKey& key = *ctx.row;
  const auto& moves = row_moves();
  const auto primary = std::find_if(moves.begin(), moves.end(), [&](const RowMove& m) { return m.id == idea.handle; });
  if (primary == moves.end()) return {};
  const std::optional<Params> first = apply_row_move(*primary, key, ctx.target, *params);
  if (!first) return {};
  std::vector<search::Proposal> out{make_row(key, ctx.target, *first, idea.text, seed.id)};
  // Further implementations of the same idea: the move combined with one other.
  for (const RowMove& other : moves) {
    if (static_cast<int>(out.size()) >= b) break;
    if (&other == &*primary) continue;
    const std::optional<Params> combo = apply_row_move(other, key, ctx.target, *first);
    if (!combo) continue;
    out.push_back(make_row(key, ctx.target, *combo, idea.text + "; with " + row_move_text(other, *combo), seed.id));
  }
  return out;
}

}  // namespace

std::optional<Params> parse_params(const std::string& text) {
  Params out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    long long v = 0;
    const char* begin = tok.data() + eq + 1;
    const char* end = tok.data() + tok.size();
    const auto [ptr, ec] = std::from_chars(begin, end, v);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    out[tok.substr(0, eq)] = v;
  }
  return out;
}

std::vector<std::string> builtin_family_names() {
  std::vector<std::string> out;
  for (const Family& f : families()) out.emplace_back(f.name);
  out.emplace_back(kRowFamilyName);
  return out;
}
bool is_builtin_family(std::string_view name) {
  return name == kRowFamilyName || find_family(name) != nullptr;
}

namespace {
bool listed(std::span<const std::string> only, std::string_view name) {
  return std::find(only.begin(), only.end(), name) != only.end();
}
}  // namespace

std::vector<search::Proposal> BuiltinProposer::seeds(const search::ProposalContext& ctx) {
  if (ctx.row != nullptr) {
    if (!only_.empty() && !listed(only_, kRowFamilyName)) return {};
    return row_seed_proposals(ctx);
  }
  std::vector<search::Proposal> out;
  for (const Family& f : families()) {
    const bool seeded = only_.empty() ? family_enabled(f) && !not_searched_for(f, ctx.key)
                                      : listed(only_, f.name) && !f.rejects(ctx.key);
    if (seeded) add_seeds(f, ctx, out);
  }
  return out;
}

std::vector<search::Proposal> BuiltinProposer::range_seeds(const search::ProposalContext& ctx,
                                                           std::span<const std::string> only) {
  std::vector<search::Proposal> out;
  for (const Family& f : families())
    if ((only.empty() ? family_enabled(f) : listed(only, f.name)) && !f.rejects(ctx.key)) add_seeds(f, ctx, out);
  return out;
}

std::vector<search::Idea> BuiltinProposer::ideas(const search::ProposalContext& ctx,
                                                 const search::Node& seed, int n) {
  if (ctx.row != nullptr) return row_ideas(ctx, seed, n);
  const Family* f = find_family(seed.family);
  const std::optional<Params> params = parse_params(seed.params);
  if (seed.proposer != "builtin" || f == nullptr || !params) return {};
  const long long blocks = blocks_of(f->plan(ctx.key, ctx.target, *params));
  std::vector<Scored> scored;
  for (const IdeaMove& move : idea_catalogue()) {
    const std::optional<Params> moved = apply_idea(move, *f, ctx.key, ctx.target, *params);
    if (!moved) continue;
    std::string text = move.text(ctx.key, ctx.target, *params);
    if (ctx.tree.tried(seed.id, text)) continue;
    if (ctx.tree.has_source(search::source_hash(render(*f, ctx.key, ctx.target, *moved)))) continue;
    const long long moved_blocks = blocks_of(f->plan(ctx.key, ctx.target, *moved));
    scored.push_back({score_move(blocks, moved_blocks, ctx.target), {std::move(text), std::string(move.id)}});
  }
  return best_ideas(std::move(scored), n);
}

std::vector<search::Proposal> BuiltinProposer::implement(const search::ProposalContext& ctx,
                                                         const search::Node& seed,
                                                         const search::Idea& idea, int b) {
  if (ctx.row != nullptr) return row_implement(ctx, seed, idea, b);
  const Family* f = find_family(seed.family);
  const std::optional<Params> params = parse_params(seed.params);
  if (f == nullptr || !params) return {};
  const IdeaMove* primary = nullptr;
  for (const IdeaMove& move : idea_catalogue())
    if (move.id == idea.handle) primary = &move;
  if (primary == nullptr) return {};
  const std::optional<Params> first = apply_idea(*primary, *f, ctx.key, ctx.target, *params);
  if (!first) return {};
  std::vector<search::Proposal> out{make(*f, ctx.key, ctx.target, *first, idea.text, seed.id)};
  // Further implementations of the same idea: the move combined with one other of the family's.
  for (const IdeaMove& other : idea_catalogue()) {
    if (static_cast<int>(out.size()) >= b) break;
    if (&other == primary) continue;
    const std::optional<Params> combo = apply_idea(other, *f, ctx.key, ctx.target, *first);
    if (!combo) continue;
    out.push_back(make(*f, ctx.key, ctx.target, *combo,
                       idea.text + "; with " + other.text(ctx.key, ctx.target, *first), seed.id));
  }
  return out;
}

std::optional<search::Proposal> BuiltinProposer::reseed(const GemmKey& key, const Target& target,
                                                        const std::string& cached_source) {
  constexpr std::string_view kHeader = "// kdispatch builtin family ";
  if (cached_source.rfind(kHeader, 0) != 0) return std::nullopt;
  const auto colon = cached_source.find(':', kHeader.size());
  const auto eol = cached_source.find('\n');
  if (colon == std::string::npos || eol == std::string::npos || colon > eol) return std::nullopt;
  const Family* f = find_family(cached_source.substr(kHeader.size(), colon - kHeader.size()));
  const auto params = parse_params(cached_source.substr(colon + 1, eol - colon - 1));
  if (f == nullptr || !params || not_searched_for(*f, key)) return std::nullopt;
  const Params p = f->complete(key, target, *params);
  if (!f->valid(key, target, p)) return std::nullopt;
  return make(*f, key, target, p, "seed: cached winner of a nearby shape", -1);
}

}  // namespace kd::builtin
