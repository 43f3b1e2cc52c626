// What kdctl's texts call the baseline a key's kernels are timed against (design.md: the call the
// application would have made). For a GEMM that is cuBLAS; for a row operator (issue 33) it is the
// framework's kernel, which the worker times beside the candidate and the verdict names
// (eval::Verdict::baseline_name, e.g. "torch 2.11.0+cu130 F.layer_norm", or the evaluator's f32
// stand-in and why torch was not timed).
#pragma once

#include <string>
#include <string_view>

#include "eval/verdict.hpp"
#include "key/row_key.hpp"
#include "store/record.hpp"

namespace kd::kdctl {

inline constexpr std::string_view kVendorBaseline = "cuBLAS";
inline constexpr std::string_view kFrameworkBaseline = "the framework's kernel";

inline bool is_row(const OpKey& key) noexcept { return std::holds_alternative<RowKey>(key); }

// "cuBLAS" for a GEMM key, "the framework's kernel" for a row operator's.
std::string_view baseline_of(const OpKey& key) noexcept;

// The baseline a verdict for `key` was timed against: the verdict's baseline_name when it has one,
// else baseline_of(key) (a GEMM's verdicts name none: cuBLAS; a row verdict that failed before
// timing names none either).
std::string baseline_of(const OpKey& key, const eval::Verdict& verdict);

// The baseline a stored record of `key` was timed against: for a row record, the baseline_name of
// the verdict in its validation report when there is one (a vendor verdict carries no report), else
// baseline_of(key). Never throws on a report that is not JSON (beyond std::bad_alloc).
std::string baseline_of(const OpKey& key, const Record& record);

}  // namespace kd::kdctl
