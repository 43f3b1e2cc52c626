// Turning a search's winner into a cache record, and a record back into an evaluation request.
#pragma once

#include "driver/search_driver.hpp"
#include "store/record.hpp"

namespace kd::search {

struct RecordVersions {
  std::string nvrtc;        // nvrtc_version()
  int driver_version = 0;   // cuDriverGetVersion
  int cublas_version = 0;   // cublasGetProperty / the worker's report
};

// The record for node `id` of `outcome` (which must be correct), keyed by `full_key_line`. A
// kernel node becomes an nvrtc_kernel record from its build (throws kd::Error (data) when it has
// none). A cuBLASLt node becomes a cublaslt_algo record: the algorithm's bytes, its workspace as
// the plan's workspace (no launches), alignment kCublasLtAlignmentBytes, and as cublas_version the
// cuBLASLt version the worker enumerated it with (not versions.cublas_version: the algorithm is
// only valid for that library).
Record make_record(const SearchOutcome& outcome, int id, const std::string& full_key_line,
                   const RecordVersions& versions);

// The search's version, stored in vendor verdicts. Bump it when the builtin families or proposers
// gain kernels that may beat the vendor where they did not: a daemon then searches the keys of
// older verdicts again (JobQueue::requeue_stale_verdicts), while the verdicts keep serving.
// 2: wg_tiled's m64n32 tiles for f32 outputs of 17-47 columns and the narrow plan at 48-64 (session 23).
inline constexpr int kSearchVersion = 2;

// A vendor verdict (RecordKind::vendor) for `full_key_line`, exact or a range: a search that
// ended without beating the vendor call, so callers keep running it and nothing searches this key
// again. `best_us` is the fastest correct candidate's time (0: none was correct), `baseline_us` the
// vendor call's (0: not timed), `reason` the search's own words, kept as the record's idea.
Record make_vendor_record(const std::string& full_key_line, const std::string& reason, double best_us,
                          double baseline_us, const std::string& search_id);

// What re-evaluates a stored record (kdctl verify): its cubin and plan, or its cuBLASLt algorithm.
eval::EvalRequest evaluation_request(const Record& record, const eval::EvalOptions& options = {});

}  // namespace kd::search
