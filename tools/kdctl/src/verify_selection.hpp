// Which stored records `kdctl verify` re-gates on a GPU: every record of that GPU model, GEMM and
// row operators' alike (issue 33: a row record goes through the same gate against the framework's
// kernel). Needs no GPU: the caller names the device.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cache_snapshot.hpp"
#include "store/record.hpp"

namespace kd::kdctl {

struct VerifySelection {
  std::vector<Record> records;       // the GPU's records, in key order (verdicts among them: nothing to run)
  std::vector<std::string> damaged;  // key lines whose record does not decode or whose line does not parse
  std::size_t other_gpus = 0;        // records of other GPU models, left alone
};

// The records of `cache` whose key's device part names `arch` and `gpu_name` exactly (the SM count
// is not compared: one model's records serve its variants). Throws what CacheSnapshot::records throws.
VerifySelection select_for_verify(const CacheSnapshot& cache, const std::string& arch, const std::string& gpu_name);

}  // namespace kd::kdctl
