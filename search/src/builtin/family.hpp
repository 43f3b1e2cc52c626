// Builtin kernel families: each is a CUDA source with named parameters (macros) and fixed hooks
// (entry point, epilogue), plus the host-side rules that pick parameters for a key and compute the
// launch plan. Every family lives in one row of families() (families.cpp); the idea catalogue
// (ideas.hpp) moves parameters of these families.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "driver/gpu_target.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin {

// Integer-valued named parameters, e.g. {"KD_ROWS": 16, "KD_KC": 1024}. Types (KD_IN_T, ...)
// come from the key at render time, never from here.
using Params = std::map<std::string, long long>;

// What the family needs to know about the GPU beyond the key (the search's generic GpuTarget).
using Target = search::GpuTarget;

struct Family {
  std::string_view name;
  std::string_view entry;
  std::string_view source;  // the embedded .cu text
  // Why this family cannot compute `key` (layout, dtype, precision class, alignment), or nullopt.
  std::optional<std::string> (*rejects)(const GemmKey& key);
  // Round-0 configurations for `key`, best guess first.
  std::vector<Params> (*seeds)(const GemmKey& key, const Target& target);
  // Fills the parameters derived from the others (ring depth from the shared-memory budget, tile
  // counts from n); applied after every idea move, before valid().
  Params (*complete)(const GemmKey& key, const Target& target, Params params);
  // Whether `params` is legal for `key` on `target` (divisibility, smem, threads).
  bool (*valid)(const GemmKey& key, const Target& target, const Params& params);
  LaunchPlan (*plan)(const GemmKey& key, const Target& target, const Params& params);
  // A trial family has not yet passed the validation gate on a GPU, or is correct but not yet fit
  // to be everyone's default (skinny_ws: its sums are not bitwise reproducible, which the gate
  // rejects on most keys): the
  // builtin proposer seeds it only when the KDISPATCH_TRIAL_FAMILIES environment variable names it
  // (comma-separated, or "all"), so a search can try it without making it everyone's default.
  bool trial = false;
  // Every entry that can be its plan's first launch starts with KD_GRID_DEPENDENCY_WAIT() when
  // the KD_PDL parameter is 1, so render() may make that launch a programmatic dependent of the
  // application's previous kernel (gemm.cuh). Such families are seeded with KD_PDL = 1 on sm_90+.
  bool pdl_first = false;
  // Why the family, though it computes `key` correctly, is not searched for it as an exact key
  // (another family serves such shapes better), or nullopt; null: it declines nothing. A range
  // search ignores it (issue 29): one record for the whole range may be worth some padding at its
  // low end, and the range gate's timing at the range's ends decides.
  std::optional<std::string> (*declines)(const GemmKey& key) = nullptr;
};

// Why `family` is not seeded for the exact key `key`: it rejects or declines it; nullopt otherwise.
std::optional<std::string> not_searched_for(const Family& family, const GemmKey& key);

// The plan `family` renders for `params`: its plan, with the first launch a programmatic dependent
// when KD_PDL is 1.
LaunchPlan rendered_plan(const Family& family, const GemmKey& key, const Target& target, const Params& params);

// Whether the builtin proposer may seed `family`: not a trial, or named by KDISPATCH_TRIAL_FAMILIES.
bool family_enabled(const Family& family);

std::span<const Family> families();
const Family* find_family(std::string_view name);

// The complete candidate source: a header naming the family and its parameters, the #defines,
// the `kdispatch:plan` comment, then the family's source. Deterministic for equal inputs.
std::string render(const Family& family, const GemmKey& key, const Target& target,
                   const Params& params);

// "KD_KC=1024 KD_ROWS=16 ..." for logs and the tree.
std::string describe(const Params& params);

}  // namespace kd::builtin
