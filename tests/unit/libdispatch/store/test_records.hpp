// Deterministic records for the store tests: record i is the same in every process, so a child
// process can check what it reads against what the parent wrote.
#pragma once

#include <string>

#include "store/record.hpp"

namespace kd::test {

// Every field set; the cubin holds NUL bytes and grows with i (past LMDB's page size for large i,
// so values land on overflow pages).
inline Record make_record(int i, std::string key_line) {
  Record r;
  r.key_line = std::move(key_line);
  r.kind = RecordKind::nvrtc_kernel;
  r.cubin = std::string("\x7f" "ELF\0\0", 6);
  for (int j = 0; j < 64 * (i % 97) + 3; ++j) r.cubin.push_back(static_cast<char>((i * 31 + j) & 0xff));
  r.ptx = ".version 9.0\n.target sm_90\n// record " + std::to_string(i);
  r.source = "// kdispatch:plan {...}\nextern \"C\" __global__ void kd_main(kd_gemm_args a) {}\n";
  r.plan.launches.push_back({"kd_main", {static_cast<std::uint32_t>(i + 1), 2, 1}, {256, 1, 1}, 4096});
  r.plan.workspace_bytes = static_cast<std::uint64_t>(i) * 1024;
  r.alignment_bytes = 16;
  r.candidate_us = 10.5 + i;
  r.baseline_us = 12.25 + i;
  r.sm_clock_mhz = 1980;
  r.validation_report = R"({"trials":5,"max_rel":1e-3})";
  r.search_id = "search-" + std::to_string(i);
  r.proposer = "builtin";
  r.idea = "wider tiles along n";
  r.nvrtc_version = "13.0";
  r.driver_version = 13000;
  r.cublas_version = 130100;
  r.created_unix_s = 1700000000 + i;
  return r;
}

inline std::string key_for(int i) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=" + std::to_string(4096 + i) +
         " n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 "
         "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

}  // namespace kd::test
