// A small cache for the kdctl tests: records for two GPU models, one search tree, one job.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "store/record.hpp"

namespace kd::test {

inline const std::string kH100 = R"(arch=sm_90 gpu="NVIDIA H100 80GB HBM3" sms=132)";
inline const std::string kH200 = R"(arch=sm_90 gpu="NVIDIA H200" sms=132)";

// A canonical bf16 shape line with m = `m`, and an f32 one.
std::string bf16_shape(int m);
std::string f32_shape();
inline std::string full(const std::string& shape, const std::string& device) { return shape + " " + device; }

// A record with every field set; `age` back from now; `payload_bytes` of cubin.
Record test_record(const std::string& key_line, std::chrono::seconds age, std::size_t payload_bytes = 256);

// The standard test cache in `dir`:
//   H100: bf16_shape(4096) (search "search-a", with a tree of 3 nodes, idea "wider tiles along n"),
//         bf16_shape(8192), f32_shape()
//   H200: bf16_shape(4096)
// plus one job {"state":"queued"} in the jobs database. The writer is closed on return.
void make_test_cache(const std::filesystem::path& dir);

// The key lines of the records in the cache in `dir`, in key order. Open it only while no other
// writer (a kdctl child) runs: one LMDB environment per directory per process.
std::vector<std::string> record_keys(const std::filesystem::path& dir);

// Row-operator records (issue 33), added to a cache by add_row_records:
//   H100: kLayernorm, a kernel record (search "search-row") timed against kTorchLayerNorm;
//         kSoftmax, a vendor verdict (the framework's kernel kept: best candidate 30 us vs 25 us)
//   H200: kRmsnorm, a kernel record
inline const std::string kLayernorm = "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1";
inline const std::string kSoftmax = "softmax dtype=bf16 rows=16 cols=32000";
inline const std::string kRmsnorm = "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1";
inline constexpr const char* kTorchLayerNorm = "torch 2.11.0+cu130 F.layer_norm";

// A row operator's kernel record: test_record's fields, a kd_row_args source and a validation
// report naming kTorchLayerNorm as the baseline.
Record row_test_record(const std::string& key_line, std::chrono::seconds age);
// A row operator's vendor verdict: the framework's kernel (25 us) beat the best candidate (30 us).
Record row_verdict_record(const std::string& key_line, std::chrono::seconds age);
void add_row_records(const std::filesystem::path& dir);

inline constexpr const char* kWinnerIdea = "wider tiles along n";
inline constexpr const char* kLoserIdea = "split k across two blocks";

}  // namespace kd::test
