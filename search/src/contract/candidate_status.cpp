#include "contract/candidate_status.hpp"

#include <array>
#include <utility>

namespace kd::search {
namespace {

constexpr std::array<std::pair<CandidateStatus, std::string_view>, 12> kNames = {{
    {CandidateStatus::ok, "ok"},
    {CandidateStatus::too_large, "too_large"},
    {CandidateStatus::no_plan, "no_plan"},
    {CandidateStatus::bad_plan, "bad_plan"},
    {CandidateStatus::host_code, "host_code"},
    {CandidateStatus::missing_entry, "missing_entry"},
    {CandidateStatus::bad_entry_signature, "bad_entry_signature"},
    {CandidateStatus::shared_memory_over_limit, "shared_memory_over_limit"},
    {CandidateStatus::plan_exceeds_launch_bounds, "plan_exceeds_launch_bounds"},
    {CandidateStatus::compile_error, "compile_error"},
    {CandidateStatus::compile_timeout, "compile_timeout"},
    {CandidateStatus::compiler_crash, "compiler_crash"},
}};

}  // namespace

std::string_view to_string(CandidateStatus status) {
  for (const auto& [value, name] : kNames) {
    if (value == status) return name;
  }
  return "unknown";
}

}  // namespace kd::search
