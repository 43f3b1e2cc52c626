// A cache record: everything needed to launch a tuned kernel and to explain and trust it.
// Serialized as: "KDR" + schema byte, 8-byte XXH3 checksum of the payload, MessagePack payload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "plan/launch_plan.hpp"

namespace kd {

inline constexpr std::uint32_t kRecordSchemaVersion = 1;

enum class RecordKind : std::uint8_t {
  nvrtc_kernel,   // cubin + PTX + launch plan
  cublaslt_algo,  // serialized cublasLtMatmulAlgo_t, launched through cublasLtMatmul
  // A vendor verdict: the key was searched and the intercepted vendor call stayed the fastest
  // known choice. Nothing to launch: callers run the vendor library, counted as vendor_chosen
  // (not a miss, so nothing is reported or searched again). candidate_us is the best correct
  // candidate's time (0 when none was correct), baseline_us the vendor's, `idea` why none won.
  // Stored under the job's line, exact or a range (one verdict for a whole bucket of n).
  vendor,
};
std::string_view to_string(RecordKind k);

struct Record {
  std::uint32_t schema_version = kRecordSchemaVersion;
  std::string key_line;  // the full key (with device part) this record answers
  RecordKind kind = RecordKind::nvrtc_kernel;

  // nvrtc_kernel
  std::string cubin;
  std::string ptx;
  std::string source;  // the candidate's CUDA source, for show/verify
  LaunchPlan plan;
  std::uint32_t alignment_bytes = 16;  // a, b, c (and bias) must be aligned to this
  // cublaslt_algo: the raw bytes of cublasLtMatmulAlgo_t (64 bytes) and the cuBLASLt version.
  std::string cublaslt_algo;

  // Times, medians in microseconds, with the SM clock seen while timing.
  double candidate_us = 0;
  double baseline_us = 0;
  int sm_clock_mhz = 0;
  std::string validation_report;  // JSON text written by the evaluator

  // Provenance.
  std::string search_id;
  std::string proposer;  // "builtin", "llm", "cublaslt", "user"
  std::string idea;

  // Versions the record was made with; a record from another cuBLAS/driver major is foreign.
  std::string nvrtc_version;  // "13.0"
  int driver_version = 0;     // cuDriverGetVersion
  int cublas_version = 0;     // cublasGetVersion / cublasLtGetVersion
  std::int64_t created_unix_s = 0;
  // vendor: the search's version (search::kSearchVersion) when the verdict was made; a daemon whose
  // search is newer searches the key again (0: a verdict before versions, or another kind).
  int search_version = 0;

  bool operator==(const Record&) const = default;
};

enum class RecordError : std::uint8_t { truncated, bad_magic, schema_mismatch, checksum_mismatch,
                                        malformed_payload };
std::string_view to_string(RecordError e);

std::string serialize_record(const Record& r);
// Never throws: any damage is a RecordError.
std::variant<Record, RecordError> deserialize_record(std::string_view bytes);

}  // namespace kd
