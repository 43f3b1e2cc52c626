#include "contract/candidate_status.hpp"

#include "contract/name_table.hpp"

namespace kd::search {
namespace {

constexpr NameTable<CandidateStatus, 12> kNames = {{
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
  return name_in(kNames, status);
}

}  // namespace kd::search
