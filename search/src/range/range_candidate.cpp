#include "range/range_candidate.hpp"

#include <fmt/format.h>

#include "range/plan_fit.hpp"

namespace kd::search::range {
namespace {

// The first parameter `completed` changed, as "KD_NT 9 -> 10".
std::string changed_param(const builtin::Params& given, const builtin::Params& completed) {
  for (const auto& [name, value] : completed) {
    const auto it = given.find(name);
    if (it == given.end()) return fmt::format("{} added as {}", name, value);
    if (it->second != value) return fmt::format("{} {} -> {}", name, it->second, value);
  }
  for (const auto& [name, value] : given)
    if (!completed.contains(name)) return fmt::format("{} dropped", name);
  return "none";
}

}  // namespace

std::string range_source(const builtin::Family& family, const GemmKey& range_key, const builtin::Target& target,
                         const builtin::Params& params, const LaunchPlan& plan) {
  // render() writes the header's key line from the key (a range prints as one) and its plan from
  // the family's plan for the key's first n; the plan line is replaced by the range plan.
  std::string source = builtin::render(family, range_key, target, params);
  constexpr std::string_view kPlanLine = "// kdispatch:plan ";
  const std::size_t begin = source.find(kPlanLine);
  const std::size_t end = source.find('\n', begin);
  source.replace(begin + kPlanLine.size(), end - begin - kPlanLine.size(), plan_to_json(plan));
  return source;
}

std::variant<RangeCandidate, std::string> range_candidate(const builtin::Family& family, const GemmKey& range_key,
                                                          const builtin::Target& target,
                                                          const builtin::Params& given) {
  if (!range_key.is_range()) return std::string("the key is not a range");
  const std::int64_t lo = range_key.n, hi = range_key.n_hi;
  // Completed as the search at HI completes them; then no n of the range may change them.
  const builtin::Params params = family.complete(range_key.at_n(hi), target, given);
  if (hi - lo + 1 > kMaxRangeValues)
    return fmt::format("the range {}..{} holds more than {} values: split it", lo, hi, kMaxRangeValues);
  std::vector<LaunchPlan> plans;
  plans.reserve(static_cast<std::size_t>(hi - lo + 1));
  for (std::int64_t n = lo; n <= hi; ++n) {
    const GemmKey key = range_key.at_n(n);
    if (const auto why = family.rejects(key)) return fmt::format("n={}: {}", n, *why);
    const builtin::Params completed = family.complete(key, target, params);
    if (completed != params)
      return fmt::format("n={}: the parameters depend on n ({})", n, changed_param(params, completed));
    if (!family.valid(key, target, params)) return fmt::format("n={}: the configuration is not valid", n);
    plans.push_back(builtin::rendered_plan(family, key, target, params));
  }
  auto fitted = fit_range_plan(plans, lo);
  if (const auto* why = std::get_if<std::string>(&fitted)) return *why;
  LaunchPlan plan = std::move(std::get<LaunchPlan>(fitted));
  if (const auto problem = range_plan_problem(plan, lo, hi)) return *problem;
  return RangeCandidate{range_source(family, range_key, target, params, plan), std::move(plan)};
}

}  // namespace kd::search::range
