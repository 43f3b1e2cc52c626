// The portable archive of `kdctl export` / `kdctl import`: the records of one GPU model.
//
// Format, version 1 (a self-describing file):
//   header   one line of JSON and '\n':
//            {"format":"kdispatch-archive","version":1,"arch":"sm_90","gpu":"NVIDIA H100 80GB HBM3",
//             "sms":132,"created_unix_s":1700000000,"count":N}
//   body     N entries, each an 8-byte little-endian length then that many bytes of
//            serialize_record() output (which carries its own XXH3 checksum)
//   trailer  "kdispatch-archive-xxh3 " + 16 lowercase hex digits + '\n': XXH3-64 (seed 0) of
//            everything before the trailer (header line and body)
// A reader verifies the trailer before trusting anything else, so a damaged archive is rejected as
// a whole; records are then checked one by one (check_archived_record).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "key/gemm_key.hpp"
#include "store/record.hpp"

namespace kd::kdctl {

inline constexpr int kArchiveVersion = 1;

struct ArchiveHeader {
  DevicePart device;
  std::int64_t created_unix_s = 0;
  std::uint64_t count = 0;
};

struct Archive {
  ArchiveHeader header;
  std::vector<std::string> records;  // serialized, as stored
};

// Builds the archive bytes; header.count is taken from records.size().
std::string write_archive(const DevicePart& device, std::int64_t created_unix_s,
                          const std::vector<std::string>& serialized_records);

// Why a whole archive is refused; `reason` says what is wrong in words.
struct ArchiveError {
  std::string reason;
};
// Never throws (beyond std::bad_alloc). Checks, in order: the trailer and checksum, the header
// (format, version, device part, count), and that the body holds exactly `count` entries.
std::variant<Archive, ArchiveError> read_archive(std::string_view bytes);

enum class RecordRejection : std::uint8_t {
  corrupted,        // deserialize_record failed (checksum, magic, truncation, payload)
  schema_mismatch,  // a record schema this kdctl does not read
  bad_key,          // key_line does not parse, or has no device part
  foreign_gpu,      // the key's device part is not the archive's
  unsound_range,    // issue 29: a range record whose plan does not serve its range (or that is not a
                    // kernel), or an exact record whose plan has grid rules: the reader refuses it
  wrong_kind,       // issue 33: a row operator's record that is a cuBLASLt algorithm (the loader
                    // launches only kernels for row calls)
};
std::string_view to_string(RecordRejection r);

struct Rejected {
  RecordRejection reason;
  std::string key_line;  // empty when the record could not be decoded
  std::string detail;    // the specific problem, in words
};

// Decodes one archived record of any operator (a GEMM's or a row operator's key line) and checks it
// belongs to an archive for `device` and that the cache reader would load it.
std::variant<Record, Rejected> check_archived_record(std::string_view bytes, const DevicePart& device);

}  // namespace kd::kdctl
