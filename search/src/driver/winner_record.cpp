#include "driver/winner_record.hpp"

#include <chrono>

#include "common/error.hpp"
#include "cublaslt/algo.hpp"

namespace kd::search {
namespace {

std::int64_t now_unix_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Record make_record(const SearchOutcome& outcome, int id, const std::string& full_key_line,
                   const RecordVersions& versions) {
  const Node& node = outcome.tree.node(id);
  Record r;
  r.key_line = full_key_line;
  if (node.cublaslt) {
    r.kind = RecordKind::cublaslt_algo;
    r.cublaslt_algo = node.cublaslt->bytes;
    r.plan.workspace_bytes = node.cublaslt->workspace_bytes;
    r.alignment_bytes = kCublasLtAlignmentBytes;
    r.cublas_version = node.cublaslt->version;
  } else {
    const auto build = outcome.builds.find(id);
    if (build == outcome.builds.end() || !build->second.plan)
      throw Error(ErrorDomain::data, 0, "search node " + std::to_string(id) + " has no compiled kernel to store");
    r.kind = RecordKind::nvrtc_kernel;
    r.cubin = build->second.cubin;
    r.ptx = build->second.ptx;
    r.source = node.source;
    r.plan = *build->second.plan;
    r.alignment_bytes = 16;
    r.cublas_version = versions.cublas_version;
  }
  r.candidate_us = node.candidate_us;
  r.baseline_us = node.baseline_us;
  if (auto v = outcome.verdicts.find(static_cast<std::size_t>(id)); v != outcome.verdicts.end()) {
    r.sm_clock_mhz = v->second.sm_clock_mhz;
    r.validation_report = eval::to_json(v->second).dump();
  }
  r.search_id = outcome.tree.search_id();
  r.proposer = node.proposer;
  r.idea = node.idea;
  r.nvrtc_version = versions.nvrtc;
  r.driver_version = versions.driver_version;
  r.created_unix_s = now_unix_s();
  return r;
}

Record make_vendor_record(const std::string& full_key_line, const std::string& reason, double best_us,
                          double baseline_us, const std::string& search_id) {
  Record r;
  r.key_line = full_key_line;
  r.kind = RecordKind::vendor;
  r.candidate_us = best_us;
  r.baseline_us = baseline_us;
  r.search_id = search_id;
  r.proposer = "vendor";
  r.idea = reason;
  r.search_version = kSearchVersion;
  // No versions: the verdict names no cubin or algorithm, so every driver and cuBLAS can act on
  // it. Like a kernel's speedup it is as old as its search: `kdctl evict` lets the key be searched
  // again.
  r.created_unix_s = now_unix_s();
  return r;
}

eval::EvalRequest evaluation_request(const Record& record, const eval::EvalOptions& options) {
  eval::EvalRequest req{record.key_line, {}, {}, options, std::nullopt};
  if (record.kind == RecordKind::cublaslt_algo) {
    req.cublaslt = CublasLtAlgo{record.cublaslt_algo, record.plan.workspace_bytes, record.cublas_version};
  } else {
    req.cubin = record.cubin;
    req.plan = record.plan;
  }
  return req;
}

}  // namespace kd::search
