// Statistics of timed runs and whether a candidate beats the baseline (design.md, "Timing"). Pure
// arithmetic.
#pragma once

#include <vector>

#include "eval/verdict.hpp"

namespace kd::eval {

// Median and quartiles (linear interpolation) of samples in microseconds; empty -> all zero.
TimeStats summarize(std::vector<double> samples_us);

enum class BaselineComparison { faster, not_faster };

// faster iff baseline.median - candidate.median exceeds margin * baseline.median plus half the
// sum of both inter-quartile ranges (the run-to-run spread).
BaselineComparison compare_with_baseline(const TimeStats& candidate, const TimeStats& baseline,
                                         double margin);

}  // namespace kd::eval
