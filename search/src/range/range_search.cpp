#include "range/range_search.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "builtin/builtin_proposer.hpp"

namespace kd::search::range {
namespace {

// Passes on only the proposals that can serve the whole range (builtin configurations whose
// range_candidate succeeds); remembers each configuration's answer.
class RangeCapableProposer final : public Proposer {
public:
  RangeCapableProposer(Proposer& inner, const GemmKey& range_key, const builtin::Target& target)
      : inner_(inner), range_key_(range_key), target_(target) {}

  std::string_view name() const override { return inner_.name(); }
  // The builtin proposer's range seeds include the families that decline the exact key at HI for
  // padding (builtin::Family::declines): the range gate's timing decides whether a range is worth it.
  std::vector<Proposal> seeds(const ProposalContext& ctx) override {
    if (const auto* b = dynamic_cast<builtin::BuiltinProposer*>(&inner_))
      return keep(builtin::BuiltinProposer::range_seeds(ctx, b->only_families()));
    return keep(inner_.seeds(ctx));
  }
  std::vector<Idea> ideas(const ProposalContext& ctx, const Node& seed, int n) override {
    return inner_.ideas(ctx, seed, n);
  }
  std::vector<Proposal> implement(const ProposalContext& ctx, const Node& seed, const Idea& idea, int b) override {
    return keep(inner_.implement(ctx, seed, idea, b));
  }

  // The range candidate of a builtin node or proposal, or why there is none.
  std::variant<RangeCandidate, std::string> candidate(const std::string& family, const std::string& params) {
    const std::string id = family + ':' + params;
    if (const auto it = cache_.find(id); it != cache_.end()) return it->second;
    std::variant<RangeCandidate, std::string> result = std::string("not a builtin family configuration");
    const builtin::Family* f = builtin::find_family(family);
    const auto p = builtin::parse_params(params);
    if (f != nullptr && p) result = range_candidate(*f, range_key_, target_, *p);
    return cache_.emplace(id, std::move(result)).first->second;
  }

private:
  std::vector<Proposal> keep(std::vector<Proposal> proposals) {
    std::erase_if(proposals, [&](const Proposal& p) {
      return !p.fate.empty() || p.cublaslt || p.family.empty() ||
             !std::holds_alternative<RangeCandidate>(candidate(p.family, p.params));
    });
    return proposals;
  }

  Proposer& inner_;
  const GemmKey& range_key_;
  const builtin::Target& target_;
  std::map<std::string, std::variant<RangeCandidate, std::string>> cache_;
};

// The correct kernel nodes that beat the baseline at HI, fastest first, at most kMaxTries.
std::vector<int> contenders(const SearchOutcome& s) {
  std::vector<int> out;
  for (const int id : s.tree.top_k(static_cast<int>(s.tree.nodes().size()))) {
    const Node& n = s.tree.node(id);
    if (n.cublaslt || n.family.empty() || n.candidate_us <= 0 || n.candidate_us >= n.baseline_us) continue;
    if (!s.builds.contains(id)) continue;
    out.push_back(id);
    if (static_cast<int>(out.size()) >= kMaxTries) break;
  }
  return out;
}

}  // namespace

nlohmann::json range_report(std::int64_t lo, std::int64_t hi, const std::vector<PointResult>& results) {
  nlohmann::json checked = nlohmann::json::array(), timed = nlohmann::json::array();
  for (const PointResult& r : results) {
    checked.push_back(r.n);
    if (!r.timed) continue;
    nlohmann::json t = {{"n", r.n}, {"verdict", eval::to_string(r.verdict.rule)}};
    if (r.verdict.candidate_time) t["candidate_us"] = r.verdict.candidate_time->median_us;
    if (r.verdict.baseline_time) t["baseline_us"] = r.verdict.baseline_time->median_us;
    timed.push_back(std::move(t));
  }
  return {{"lo", lo}, {"hi", hi}, {"checked", checked}, {"timed", timed}};
}

RangeOutcome run_range_search(const GemmKey& range_key, const builtin::Target& target,
                              const std::vector<Proposer*>& proposers, CompileService& compiler,
                              EvalBackend* backend, const SearchOptions& options, const SearchObserver& observer) {
  RangeOutcome out;
  std::vector<std::unique_ptr<RangeCapableProposer>> filters;
  std::vector<Proposer*> filtered;
  for (Proposer* p : proposers) {
    filters.push_back(std::make_unique<RangeCapableProposer>(*p, range_key, target));
    filtered.push_back(filters.back().get());
  }
  if (filters.empty()) {
    out.reason = "no proposer";
    return out;
  }
  const GemmKey at_hi = range_key.at_n(range_key.n_hi);
  out.search = run_search(at_hi, target, filtered, compiler, backend, options, observer);
  if (backend == nullptr || options.mode != SearchMode::evaluate) {
    out.reason = "dry run: the range gate did not run";
    return out;
  }
  const std::vector<int> ids = contenders(out.search);
  if (ids.empty()) {
    out.reason = out.search.tree.nodes().empty()
                     ? "no candidate can serve every n of the range"
                     : "no candidate that serves every n of the range beat the vendor library at n=" +
                           std::to_string(range_key.n_hi);
    return out;
  }
  for (const int id : ids) {
    if (options.cancelled && options.cancelled()) {
      out.reason = "stopped";
      return out;
    }
    const Node& node = out.search.tree.node(id);
    auto made = filters.front()->candidate(node.family, node.params);
    if (!std::holds_alternative<RangeCandidate>(made)) continue;
    RangeCandidate candidate = std::get<RangeCandidate>(std::move(made));
    RangeGate gate = gate_range_kernel(*backend, range_key, out.search.builds.at(id).cubin, candidate.plan,
                                       options.eval, GateStop::first_failure);
    out.points = std::move(gate.points);
    out.results = std::move(gate.results);
    if (gate.passed()) {
      out.winner = id;
      out.candidate = std::move(candidate);
      return out;
    }
    out.reason = fmt::format("node {} ({} {}): {}", id, node.family, node.params, gate.failure);
  }
  return out;
}

eval::Verdict verify_range_record(EvalBackend& backend, const Record& record, const eval::EvalOptions& options) {
  eval::Verdict refused;
  const auto parsed = parse_key(record.key_line);
  const auto* key = std::get_if<GemmKey>(&parsed);
  if (key == nullptr || !key->is_range() || !key->device) {
    refused.rule = eval::Rule::key_invalid;
    refused.detail = "not the full key of a range of n";
    return refused;
  }
  if (const auto problem = range_plan_problem(record.plan, key->n, key->n_hi)) {
    refused.rule = eval::Rule::plan_invalid;
    refused.detail = *problem;
    return refused;
  }
  eval::Verdict last;
  for (const std::int64_t n : range_points(key->n, key->n_hi, record.plan).checked) {
    eval::EvalOptions o = options;
    if (n != key->n_hi) o.timing = eval::Timing::skip;
    eval::EvalRequest req{key->at_n(n).full_line(), record.cubin, std::get<LaunchPlan>(plan_at_n(record.plan, n)), o,
                          std::nullopt};
    last = backend.evaluate(req);
    if (!last.correct()) {
      last.detail = fmt::format("n={}: {}", n, last.detail);
      return last;
    }
  }
  return last;
}

Record make_range_record(const RangeOutcome& outcome, const std::string& full_key_line,
                         const RecordVersions& versions) {
  const int id = outcome.winner.value();
  Record r = make_record(outcome.search, id, full_key_line, versions);
  r.plan = outcome.candidate->plan;
  r.source = outcome.candidate->source;
  const auto parsed = parse_key(full_key_line);
  const GemmKey& key = std::get<GemmKey>(parsed);
  nlohmann::json report = nlohmann::json::object();
  // The times at HI are the record's own figures (the last timed point).
  for (const PointResult& p : outcome.results) {
    if (!p.timed || p.n != key.n_hi) continue;
    report = eval::to_json(p.verdict);
    if (p.verdict.candidate_time) r.candidate_us = p.verdict.candidate_time->median_us;
    if (p.verdict.baseline_time) r.baseline_us = p.verdict.baseline_time->median_us;
    r.sm_clock_mhz = p.verdict.sm_clock_mhz;
  }
  report["range"] = range_report(key.n, key.n_hi, outcome.results);
  r.validation_report = report.dump();
  return r;
}

}  // namespace kd::search::range
