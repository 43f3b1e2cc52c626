#include "driver/search_driver.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

namespace kd::search {
namespace {

constexpr std::size_t kLogKeepBytes = 4096;

// The GemmKey a row-operator search lends ProposalContext::key: it names nothing.
const GemmKey& no_gemm_key() {
  static const GemmKey none{};
  return none;
}

// Proposers asked for `key`: all of them for a GEMM, those serving row operators for a row key.
std::vector<Proposer*> proposers_for(const OpKey& key, const std::vector<Proposer*>& all) {
  if (std::holds_alternative<GemmKey>(key)) return all;
  std::vector<Proposer*> out;
  for (Proposer* p : all)
    if (p->serves_row_operators()) out.push_back(p);
  return out;
}

class Run {
public:
  Run(const OpKey& key, const GpuTarget& target, const std::vector<Proposer*>& proposers,
      CompileService& compiler, EvalBackend* backend, const SearchOptions& options,
      const SearchObserver& observer)
      : op_(key), key_(std::holds_alternative<GemmKey>(op_) ? std::get<GemmKey>(op_) : no_gemm_key()),
        row_(std::get_if<RowKey>(&op_)), target_(target), proposers_(proposers_for(op_, proposers)),
        compiler_(compiler), backend_(backend), options_(options), observer_(observer),
        start_(std::chrono::steady_clock::now()) {
    const bool keyed = row_ ? row_->device.has_value() : key_.device.has_value();
    const std::string id = options.search_id.empty()
        ? fmt::format("{:016x}-{}", op_hash(op_), std::chrono::duration_cast<std::chrono::seconds>(
              std::chrono::system_clock::now().time_since_epoch()).count())
        : options.search_id;
    out_.tree = SearchTree(id, keyed ? op_full_line(op_) : op_shape_line(op_));
    if (backend_ && options.mode == SearchMode::evaluate) {
      if (row_ != nullptr) {
        // Row operators are memory bound: their floor is their bytes at the measured bandwidth.
        if (const auto r = backend_->roofline(); r && r->bandwidth_bytes_per_s > 0) {
          bandwidth_gb_per_s_ = r->bandwidth_bytes_per_s / 1e9;
          floor_us_ = static_cast<double>(min_bytes(row_->shape())) / r->bandwidth_bytes_per_s * 1e6;
        }
        return;
      }
      floor_us_ = backend_->floor_us(key_);
      if (const auto r = backend_->roofline()) {
        bandwidth_gb_per_s_ = r->bandwidth_bytes_per_s / 1e9;
        if (const auto p = r->peak_flops_per_s.find(eval::peak_class(key_)); p != r->peak_flops_per_s.end())
          peak_tflop_per_s_ = p->second / 1e12;
      }
    }
  }

  SearchOutcome finish(std::string reason) {
    out_.stop_reason = std::move(reason);
    out_.floor_us = floor_us_;
    int confirmations = 0;
    for (const int id : out_.tree.top_k(static_cast<int>(out_.tree.nodes().size()))) {
      if (out_.tree.node(id).verdict != "passed") continue;
      if (confirmations++ == kMaxConfirmations) break;
      if (confirmed(id)) {
        out_.winner = id;
        break;
      }
    }
    out_.elapsed = elapsed();
    if (auto best = out_.winner ? out_.winner : out_.tree.best()) out_.baseline_us = out_.tree.node(*best).baseline_us;
    emit({SearchEvent::Kind::finished, round_, nullptr, out_.stop_reason});
    return std::move(out_);
  }

  SearchOutcome run(std::vector<Proposal> extra_seeds) {
    // Round 0.
    std::vector<Proposal> batch = std::move(extra_seeds);
    for (Proposer* p : proposers_) {
      std::vector<Proposal> s = p->seeds(context());
      batch.insert(batch.end(), std::make_move_iterator(s.begin()), std::make_move_iterator(s.end()));
    }
    if (batch.empty()) return finish("no proposer has a candidate for this key");
    if (auto stop = run_round(std::move(batch))) return finish(*stop);

    if (options_.mode == SearchMode::dry_run) {
      // One round of ideas on the first compiled seed, compiled only.
      const auto& nodes = out_.tree.nodes();
      const auto seed = std::find_if(nodes.begin(), nodes.end(), [](const Node& n) { return n.compile_status == "ok"; });
      if (seed == nodes.end()) return finish("dry run: no seed compiled");
      ++round_;
      if (auto stop = run_round(expand({seed->id}))) return finish(*stop);
      return finish("dry run: proposals compiled, nothing evaluated");
    }

    double best_before = best_us();
    if (best_before == 0) return finish("no correct candidate in round 0");
    // A round that does not improve still changes the seeds (the next best k), so one flat round
    // is not the end: the search stops after `patience` of them in a row.
    const int patience = std::max(1, options_.budget.patience);
    int flat_rounds = 0;
    for (round_ = 1; round_ <= options_.budget.rounds; ++round_) {
      std::vector<Proposal> next = expand(refinable_top_k(options_.budget.topk));
      if (next.empty()) return finish("no proposer has a new idea for the best seeds");
      if (auto stop = run_round(std::move(next))) return finish(*stop);
      const double now = best_us();
      if (now > best_before * (1.0 - options_.budget.min_improvement)) {
        if (++flat_rounds >= patience)
          return finish(fmt::format("{} round(s) in a row did not improve the best time by {:.0f}%",
                                    flat_rounds, options_.budget.min_improvement * 100));
        continue;
      }
      flat_rounds = 0;
      best_before = now;
    }
    return finish(fmt::format("round limit ({}) reached", options_.budget.rounds));
  }

private:
  // The fastest of many noisy measurements is biased low (the winner's curse): a node is
  // published only when a second, independent evaluation also beats the baseline by the margin.
  // Its times become the confirmation's. At most kMaxConfirmations nodes are tried, fastest first.
  static constexpr int kMaxConfirmations = 3;
  bool confirmed(int id) {
    if (options_.mode != SearchMode::evaluate || backend_ == nullptr) return true;
    Node& n = out_.tree.node(id);
    eval::EvalRequest req{out_.tree.key_line(), {}, {}, options_.eval, n.cublaslt};
    if (!n.cublaslt) {
      const auto b = out_.builds.find(id);
      if (b == out_.builds.end() || !b->second.plan) return false;
      req.cubin = b->second.cubin;
      req.plan = *b->second.plan;
    }
    const eval::Verdict v = backend_->evaluate(req);
    if (v.candidate_time) n.candidate_us = v.candidate_time->median_us;
    if (v.baseline_time) n.baseline_us = v.baseline_time->median_us;
    out_.verdicts[static_cast<std::size_t>(id)] = v;
    if (v.accepted()) return true;
    n.verdict = v.correct() ? "not_faster" : std::string(eval::to_string(v.rule));
    n.detail = "a second measurement did not confirm the win: " + v.detail;
    return false;
  }

  ProposalContext context() const {
    AlgoSource* algos = backend_ != nullptr && options_.mode == SearchMode::evaluate && row_ == nullptr
        ? backend_->algo_source() : nullptr;
    return {key_, target_, out_.tree, floor_us_, baseline_us(), bandwidth_gb_per_s_, peak_tflop_per_s_, algos, row_};
  }
  // The k fastest correct nodes that a proposer can refine: kernels, not cuBLASLt algorithms.
  std::vector<int> refinable_top_k(int k) const {
    std::vector<int> out;
    for (const int id : out_.tree.top_k(static_cast<int>(out_.tree.nodes().size()))) {
      if (static_cast<int>(out.size()) >= k) break;
      if (!out_.tree.node(id).cublaslt) out.push_back(id);
    }
    return out;
  }
  static std::string proposal_hash(const Proposal& p) {
    return p.cublaslt ? algo_hash(*p.cublaslt) : source_hash(p.source);
  }
  double best_us() const {
    const auto b = out_.tree.best();
    return b ? out_.tree.node(*b).candidate_us : 0;
  }
  double baseline_us() const {
    const auto b = out_.tree.best();
    return b ? out_.tree.node(*b).baseline_us : 0;
  }
  std::chrono::milliseconds elapsed() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_);
  }
  void emit(const SearchEvent& e) const {
    if (observer_) observer_(e);
  }

  std::vector<Proposal> expand(const std::vector<int>& seeds) {
    std::vector<Proposal> out;
    for (const int id : seeds) {
      const Node seed = out_.tree.node(id);
      for (Proposer* p : proposers_) {
        for (const Idea& idea : p->ideas(context(), seed, options_.budget.ideas)) {
          std::vector<Proposal> impls = p->implement(context(), seed, idea, options_.budget.impls);
          out.insert(out.end(), std::make_move_iterator(impls.begin()), std::make_move_iterator(impls.end()));
        }
      }
    }
    return out;
  }

  // Compiles the batch in parallel, evaluates the compiled ones one at a time; returns a stop
  // reason when a budget ran out.
  std::optional<std::string> run_round(std::vector<Proposal> batch) {
    emit({SearchEvent::Kind::round_started, round_, nullptr, fmt::format("{} proposals", batch.size())});
    std::vector<Proposal> fresh;
    for (Proposal& p : batch) {
      const std::string h = proposal_hash(p);
      if (out_.tree.has_source(h) ||
          std::any_of(fresh.begin(), fresh.end(), [&](const Proposal& q) { return proposal_hash(q) == h; }))
        continue;
      fresh.push_back(std::move(p));
    }
    const int room = options_.budget.max_candidates - static_cast<int>(out_.tree.nodes().size());
    std::optional<std::string> stop;
    if (static_cast<int>(fresh.size()) > room) {
      fresh.resize(static_cast<std::size_t>(std::max(0, room)));
      stop = fmt::format("candidate budget ({}) reached", options_.budget.max_candidates);
    }
    std::vector<CandidateBuild> builds = compile(fresh);
    repair_failed(fresh, builds);

    for (std::size_t i = 0; i < fresh.size(); ++i) {
      Proposal& p = fresh[i];
      CandidateBuild& b = builds[i];
      Node n;
      n.parent = p.parent;
      n.round = round_;
      n.proposer = p.proposer;
      n.family = p.family;
      n.idea = p.idea;
      n.params = p.params;
      n.source_hash = proposal_hash(p);
      n.source = std::move(p.source);
      n.cublaslt = p.cublaslt;
      n.verdict = "not_evaluated";
      if (!p.fate.empty()) {
        n.compile_status = "not_compiled";
        n.verdict = p.fate;
        n.detail = p.fate_detail;
        out_.tree.add(std::move(n));
        emit({SearchEvent::Kind::candidate_done, round_, &out_.tree.nodes().back(), {}});
        continue;
      }
      if (n.cublaslt) {
        n.compile_status = "not_compiled";  // an algorithm, evaluated as is
      } else {
        n.compile_status = b.ok() ? "ok" : std::string(to_string(b.status));
        n.compile_log = b.log.substr(0, kLogKeepBytes);
        n.compile_ms = std::chrono::duration<double, std::milli>(b.compile_time).count();
      }
      if (!n.cublaslt && !b.ok()) {
        n.verdict = "compile_failed";
        n.detail = b.message;
      } else if (options_.mode == SearchMode::evaluate && backend_ != nullptr) {
        if (options_.cancelled && options_.cancelled()) {
          stop = "stopped";
          n.detail = "not evaluated: the search was stopped";
        } else if (elapsed() > options_.budget.wall) {
          stop = fmt::format("wall-time budget ({} s) reached", options_.budget.wall.count());
          n.detail = "not evaluated: wall-time budget reached";
        } else {
          eval::EvalRequest req{out_.tree.key_line(), {}, {}, options_.eval, n.cublaslt};
          if (!n.cublaslt) {
            req.cubin = b.cubin;
            req.plan = *b.plan;
          }
          const eval::Verdict v = backend_->evaluate(req);
          n.verdict = std::string(eval::to_string(v.rule));
          n.detail = v.detail;
          if (v.candidate_time) n.candidate_us = v.candidate_time->median_us;
          if (v.baseline_time) n.baseline_us = v.baseline_time->median_us;
          out_.verdicts.emplace(out_.tree.nodes().size(), v);
        }
      }
      const int id = out_.tree.add(std::move(n));
      if (out_.tree.node(id).correct() && !out_.tree.node(id).cublaslt) out_.builds.emplace(id, std::move(b));
      emit({SearchEvent::Kind::candidate_done, round_, &out_.tree.node(id), {}});
    }
    out_.tree.close_round(round_);
    emit({SearchEvent::Kind::round_finished, round_, nullptr, {}});
    return stop;
  }

  std::vector<CandidateBuild> compile(const std::vector<Proposal>& batch) {
    std::vector<CompileRequest> requests;
    std::vector<std::size_t> index;  // batch position of each request
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].fate.empty() || batch[i].cublaslt) continue;
      const Proposal& p = batch[i];
      requests.push_back({p.source, fmt::format("{}-{}.cu", p.family.empty() ? p.proposer : p.family, i),
                          target_.arch, {},
                          row_ != nullptr ? CompileRequest::kRowArgsBytes : CompileRequest::kGemmArgsBytes});
      index.push_back(i);
    }
    std::vector<CandidateBuild> compiled = compiler_.compile_all(requests);
    std::vector<CandidateBuild> out(batch.size());
    for (std::size_t j = 0; j < index.size(); ++j) out[index[j]] = std::move(compiled[j]);
    return out;
  }

  // One repair round: a candidate that did not compile goes back to its proposer with the log;
  // the repaired source replaces it when it compiles (the failed one is kept in the tree).
  void repair_failed(std::vector<Proposal>& batch, std::vector<CandidateBuild>& builds) {
    std::vector<Proposal> repaired;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].fate.empty() || batch[i].cublaslt || builds[i].ok()) continue;
      for (Proposer* p : proposers_) {
        if (p->name() != batch[i].proposer) continue;
        const std::string log = builds[i].log.empty() ? builds[i].message : builds[i].log;
        if (auto fixed = p->repair(context(), batch[i], log)) {
          fixed->idea = "repair: " + batch[i].idea;
          repaired.push_back(std::move(*fixed));
        }
      }
    }
    if (repaired.empty()) return;
    std::vector<CandidateBuild> more = compile(repaired);
    for (std::size_t i = 0; i < repaired.size(); ++i) {
      batch.push_back(std::move(repaired[i]));
      builds.push_back(std::move(more[i]));
    }
  }

  const OpKey op_;
  const GemmKey& key_;   // op_'s GEMM, or no_gemm_key()
  const RowKey* row_;    // op_'s row key, or null
  const GpuTarget& target_;
  const std::vector<Proposer*> proposers_;
  CompileService& compiler_;
  EvalBackend* backend_;
  const SearchOptions& options_;
  const SearchObserver& observer_;
  std::chrono::steady_clock::time_point start_;
  SearchOutcome out_;
  int round_ = 0;
  double floor_us_ = 0;
  double bandwidth_gb_per_s_ = 0;
  double peak_tflop_per_s_ = 0;
};

}  // namespace

SearchOutcome run_search(const GemmKey& key, const GpuTarget& target,
                         const std::vector<Proposer*>& proposers, CompileService& compiler,
                         EvalBackend* backend, const SearchOptions& options,
                         const SearchObserver& observer, std::vector<Proposal> extra_seeds) {
  Run run(OpKey(key), target, proposers, compiler, backend, options, observer);
  return run.run(std::move(extra_seeds));
}

SearchOutcome run_search(const OpKey& key, const GpuTarget& target,
                         const std::vector<Proposer*>& proposers, CompileService& compiler,
                         EvalBackend* backend, const SearchOptions& options,
                         const SearchObserver& observer, std::vector<Proposal> extra_seeds) {
  Run run(key, target, proposers, compiler, backend, options, observer);
  return run.run(std::move(extra_seeds));
}

}  // namespace kd::search
