// Turning a search's winner into a cache record.
#pragma once

#include "driver/search_driver.hpp"
#include "store/record.hpp"

namespace kd::search {

struct RecordVersions {
  std::string nvrtc;        // nvrtc_version()
  int driver_version = 0;   // cuDriverGetVersion
  int cublas_version = 0;   // cublasGetProperty / the worker's report
};

// The record for node `id` of `outcome` (which must be correct and have a build), keyed by
// `full_key_line`. Throws kd::Error (data) when the node has no compiled output.
Record make_record(const SearchOutcome& outcome, int id, const std::string& full_key_line,
                   const RecordVersions& versions);

}  // namespace kd::search
