// Checks that every builtin family's unit test applies the same way: the Llama shape file, its seeds,
// its idea moves, NVRTC compiles of its rendered sources and the GPU lab's variant files.
#pragma once

#include <functional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "builtin/family.hpp"
#include "builtin/ideas.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin::test {

// The source tree (KD_SOURCE_DIR, set by ctest; "." otherwise).
std::string source_dir();
// The gemm keys of tools/shapes/llama3-8b.txt.
std::vector<GemmKey> llama_keys();
GemmKey key_of(const std::string& line);
std::vector<Params> completed_seeds(const Family& f, const GemmKey& key, const Target& t);
// The completed seeds whose parameter `name` is set and not 0 (a scheme switched on).
std::vector<Params> completed_seeds_with(const Family& f, const GemmKey& key, const Target& t, const char* name);

// Every completed seed of every Llama key `f` serves, on the Hopper target `t`: a key has seeds,
// each valid on `t` and not on Ampere (wgmma needs sm_90a), whose plan parsed from its rendered
// source is f.plan. `each` then checks the family's own rules on a seed and its plan, `per_key` on
// a key's seeds.
using SeedCheck = std::function<void(const GemmKey&, const Params&, const LaunchPlan&)>;
using SeedsCheck = std::function<void(const GemmKey&, const std::vector<Params>&)>;
void check_hopper_seeds(const Family& f, const Target& t, const SeedCheck& each, const SeedsCheck& per_key = {});

// The family's table row names it and embeds its kernel source, which defines each of `entries`.
void expect_row_source(const Family& f, std::string_view name, std::initializer_list<std::string_view> entries);

struct IdeaSweep {
  int applied = 0;
  std::set<std::string> ids;
};
// Applies every move to every completed seed of every Llama key the family serves: each move names
// the family, each result is valid, differs from the seed and the moves before it, and is explained.
IdeaSweep sweep_ideas(const Family& f, std::span<const IdeaMove> moves);

// Rendered sources of one family, each distinct compiled body kept once: two keys that render the
// same macros and kernel (the text from the first #define on) compile the same.
class DistinctSources {
public:
  DistinctSources(const Family& f, const Target& t) : family_(f), target_(t) {}
  void add(const GemmKey& key, const Params& p);
  const std::vector<std::string>& sources() const { return sources_; }

private:
  const Family& family_;
  Target target_;
  std::set<std::string> bodies_;
  std::vector<std::string> sources_;
};

// The distinct sources of the completed seeds of every key `f` searches for, the Llama keys and
// `extra` (gemm key lines), and of one step of every move in `ideas` from the first seed of each
// key that `stepped` picks.
std::vector<std::string> seeds_and_first_steps(const Family& f, const Target& t, std::span<const IdeaMove> ideas,
                                               const std::vector<std::string>& extra,
                                               const std::function<bool(const GemmKey&)>& stepped);

// Compiles each source with NVRTC (ptxas -v for the target's arch): it must compile, without spill
// stores, and when `no_wgmma_serialization` without ptxas serializing wgmma.
void expect_nvrtc_clean(const std::vector<std::string>& sources, bool no_wgmma_serialization);

// tools/dev/FILE (a kernel-lab config) agrees with the family's rules: every variant is valid and
// complete for its case's key and carries exactly the family's launch plan and workspace. Adds the
// number of variants to `variants`.
void check_lab_config(const std::string& file, const Family& f, int& variants);

}  // namespace kd::builtin::test
