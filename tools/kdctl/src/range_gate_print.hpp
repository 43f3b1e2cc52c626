// How kdctl search, validate and bench print the range gate (issue 29): one line per point, the
// timed ones with their times against cuBLAS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "range/range_gate.hpp"

namespace kd::kdctl {

// "33, 46, 64": the n of `ns`, comma-separated.
std::string n_list(const std::vector<std::int64_t>& ns);

// One line per point: "  n=46    passed          41.2 us vs cuBLAS 55.0 us (x1.33)" where timed,
// "  n=47    correct         (checked, not timed)" elsewhere, the verdict's detail under a point
// that is not correct.
void print_range_points(const std::vector<search::range::PointResult>& results);

}  // namespace kd::kdctl
