// The search for a range job (issue 29: a key `n=LO..HI`).
//
// 1. The branching search runs for the exact key at n = HI with every proposal that cannot serve
//    the whole range dropped (range/range_candidate.hpp): builtin family configurations only, since
//    LLM-written kernels carry no range plan and cuBLASLt algorithms are chosen for one shape. The
//    builtin seeds include the families that decline the exact key at HI for padding
//    (BuiltinProposer::range_seeds: wg_tiled for f32 n 17..47, wg_tma for n < 48).
// 2. Its fastest correct kernels that beat the vendor library at HI (at most kMaxTries) are then
//    held to the range gate, in order: the full validation gate at every checked point, timing at
//    the timed points (range/range_points.hpp), each an exact key with the range plan's grid for
//    its n, run through the same backend. The first that passes every checked point and wins
//    (verdict `passed`) at every timed point is the winner.
// The record keeps the range key, the range plan and source, the times at HI and, in its
// validation report, the points ("range": {"lo", "hi", "checked", "timed": [{n, candidate_us,
// baseline_us}]}), which `kdctl show` prints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/winner_record.hpp"
#include "driver/search_driver.hpp"
#include "range/range_candidate.hpp"
#include "range/range_gate.hpp"
#include "range/range_points.hpp"

namespace kd::search::range {

inline constexpr int kMaxTries = 3;

struct RangeOutcome {
  SearchOutcome search;             // the search at n = HI (its tree is the job's)
  std::optional<int> winner;        // the node whose range candidate passed everywhere
  std::optional<RangeCandidate> candidate;  // the winner's range source and plan
  RangePoints points;               // where the winner (or the last try) was checked and timed
  std::vector<PointResult> results; // the winner's (or the last try's) point results
  std::string reason;               // why there is no winner
};

// Never throws for anything a candidate does. `range_key` must be a range with a device part.
RangeOutcome run_range_search(const GemmKey& range_key, const builtin::Target& target,
                              const std::vector<Proposer*>& proposers, CompileService& compiler,
                              EvalBackend* backend, const SearchOptions& options, const SearchObserver& observer);

// The record of the winner (which must be set), keyed by the range key's full line.
Record make_range_record(const RangeOutcome& outcome, const std::string& full_key_line,
                         const RecordVersions& versions);

// A stored range record held to the gate again (kdctl verify, the remote tier's gate): the gate at
// every point range_points() checks, each with the grid its rule computes, timed at the range's
// last n only when `options` measure. Returns the first verdict that is not correct (its detail
// prefixed with "n=X: "), else the verdict at the last n. A record whose key is not a range, or
// whose plan fails range_plan_problem, gets key_invalid or plan_invalid.
eval::Verdict verify_range_record(EvalBackend& backend, const Record& record, const eval::EvalOptions& options = {});

// The "range" object of a validation report (above), from the points' results.
nlohmann::json range_report(std::int64_t lo, std::int64_t hi, const std::vector<PointResult>& results);

}  // namespace kd::search::range
