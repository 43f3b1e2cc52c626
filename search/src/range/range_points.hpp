// Where a range candidate is checked and timed (issue 29). The gate runs at every checked point;
// the timed points (a subset) are also timed against the vendor library, and the range is
// published only when the candidate wins at each of them.
//
// Checked, in this priority: the timed points; ragged values inside (odd, so no vector width
// divides them) near both ends and at a third of the range; for every rule of the plan, the last n of a step and the first of the
// next (tile boundaries: where one more column of tiles starts, mostly empty) at the first, a
// middle and the last step, which include the n where a capped extent reaches its cap (where a
// grid-stride launch stops growing). Timed: the ends and the geometric middle.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/launch_plan.hpp"

namespace kd::search::range {

struct RangePoints {
  std::vector<std::int64_t> checked;  // sorted, distinct, within [lo, hi]; includes `timed`
  std::vector<std::int64_t> timed;    // sorted, distinct
};

// At most kMaxChecked checked points (the ends and the timed points always among them).
inline constexpr std::size_t kMaxChecked = 16;
RangePoints range_points(std::int64_t lo, std::int64_t hi, const LaunchPlan& range_plan);

}  // namespace kd::search::range
