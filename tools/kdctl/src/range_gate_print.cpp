#include "range_gate_print.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace kd::kdctl {

std::string n_list(const std::vector<std::int64_t>& ns) {
  std::string out;
  for (const std::int64_t n : ns) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

void print_range_points(const std::vector<search::range::PointResult>& results) {
  for (const search::range::PointResult& r : results) {
    const eval::Verdict& v = r.verdict;
    // An untimed point's rule is not_faster by construction: it was not timed, only checked.
    const std::string what = !v.correct() || r.timed ? std::string(eval::to_string(v.rule)) : "correct";
    std::string times = "(checked, not timed)";
    if (r.timed && v.candidate_time && v.baseline_time)
      times = fmt::format("{:.1f} us vs cuBLAS {:.1f} us (x{:.2f})", v.candidate_time->median_us,
                          v.baseline_time->median_us, v.baseline_time->median_us / v.candidate_time->median_us);
    else if (!v.correct())
      times = "(rejected)";
    std::printf("  n=%-7lld %-15s %s\n", static_cast<long long>(r.n), what.c_str(), times.c_str());
    if (!v.correct() && !v.detail.empty()) std::printf("      %s\n", v.detail.c_str());
  }
  std::fflush(stdout);
}

}  // namespace kd::kdctl
