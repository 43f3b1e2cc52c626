// The branching search of design.md: round 0 evaluates seeds (family defaults, cached winners of
// nearby shapes, the cuBLASLt algorithms of the cublaslt proposer); each later round takes the best
// k correct kernel nodes, asks every proposer for I ideas per seed and B implementations per idea,
// compiles them in parallel and evaluates them one at a time through the gate. cuBLASLt nodes are
// evaluated the same way but never compiled, and never seed a later round (an algorithm has no
// source to change). Stops on the round limit, a budget (candidates, wall time) or a round that
// does not improve the best time.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile_service.hpp"
#include "driver/proposer.hpp"
#include "eval/evaluator.hpp"
#include "eval/roofline.hpp"
#include "eval/verdict.hpp"
#include "tree/search_tree.hpp"

namespace kd::search {

struct SearchBudget {
  int rounds = 3;           // rounds after round 0
  int ideas = 3;            // I: ideas per seed per proposer
  int impls = 2;            // B: implementations per idea
  int topk = 2;             // k: seeds carried into the next round
  int max_candidates = 64;  // evaluated or compiled candidates in all
  std::chrono::seconds wall{900};
  double min_improvement = 0.01;  // a round counts as improving when it beats the best by 1%
  int patience = 2;  // consecutive rounds without improvement before the search stops (early stop)
};

// Where candidates run: the sandboxed worker (WorkerBackend) in production.
class EvalBackend {
public:
  virtual ~EvalBackend() = default;
  virtual eval::Verdict evaluate(const eval::EvalRequest& request) = 0;
  // The floor for this GEMM key on the backend's GPU (0 when unknown); a row operator's floor is
  // the driver's, from roofline().
  virtual double floor_us(const GemmKey& key) = 0;
  // The measured roofline of the backend's GPU, when known.
  virtual std::optional<eval::Roofline> roofline() { return std::nullopt; }
  // Where the cublaslt proposer gets its algorithms; null when this backend cannot enumerate.
  virtual AlgoSource* algo_source() { return nullptr; }
};

enum class SearchMode { evaluate, dry_run };

struct SearchOptions {
  SearchBudget budget;
  eval::EvalOptions eval;
  SearchMode mode = SearchMode::evaluate;
  std::string search_id;  // empty: derived from the key and the time
  // Polled before each evaluation; true stops the search with stop reason "stopped".
  std::function<bool()> cancelled;
};

struct SearchEvent {
  enum class Kind { round_started, candidate_done, round_finished, finished } kind;
  int round = 0;
  const Node* node = nullptr;  // candidate_done
  std::string message;
};
using SearchObserver = std::function<void(const SearchEvent&)>;

struct SearchOutcome {
  SearchTree tree;
  std::optional<int> winner;  // fastest node with verdict `passed`
  std::string stop_reason;
  double baseline_us = 0;     // vendor median measured alongside the winner (or the best)
  double floor_us = 0;        // the key's roofline floor on the backend's GPU (0: unknown)
  std::map<int, CandidateBuild> builds;  // compiled output of every correct kernel node
  std::map<std::size_t, eval::Verdict> verdicts;  // by node id, for every evaluated node
  std::chrono::milliseconds elapsed{0};
};

// Runs one search. `extra_seeds` join round 0 (cached winners of nearby shapes). With
// SearchMode::dry_run `backend` may be null: round 0 and one round of ideas on the first compiled
// seed are compiled, nothing runs (proposers get no AlgoSource). Never throws for anything a
// candidate does.
SearchOutcome run_search(const GemmKey& key, const GpuTarget& target,
                         const std::vector<Proposer*>& proposers, CompileService& compiler,
                         EvalBackend* backend, const SearchOptions& options,
                         const SearchObserver& observer, std::vector<Proposal> extra_seeds = {});

// The same search for any operator's key (issue 33). A GEMM key runs exactly as above. A row
// operator's key asks only the proposers that serve row operators, has no cuBLASLt algorithms
// (ProposalContext::algos stays null), gets as floor its minimum bytes at the backend's measured
// bandwidth, and is gated by the evaluator against its row baseline (EvalRequest::key_line).
SearchOutcome run_search(const OpKey& key, const GpuTarget& target,
                         const std::vector<Proposer*>& proposers, CompileService& compiler,
                         EvalBackend* backend, const SearchOptions& options,
                         const SearchObserver& observer, std::vector<Proposal> extra_seeds = {});

}  // namespace kd::search
