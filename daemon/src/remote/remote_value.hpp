// What the tier stores in Redis, and the checks a value passes before anything uses it.
//
// Keys: "<prefix>:record:<full key line>" holds a record; "<prefix>:lease:<full key line>" is a
// search's lease (remote_leases.hpp). The full key line names the GPU, so records of every GPU
// model share one Redis without meeting.
//
// A value, version 1: "kdremote" (8 bytes), the version (1 byte), the key line's length (2 bytes,
// little-endian), the record's length (4 bytes, little-endian), XXH3-64 of the key line and the
// record (8 bytes, little-endian), the key line, then the record exactly as serialize_record()
// writes it (the encoding of the cache and of `kdctl export`, with its own checksum). Nothing else
// goes to Redis: no job, no search tree, no path, no credential, no process of this machine.
//
// The checksum finds damage (a truncated or garbled value), not forgery: anyone who can write to
// the Redis can write a well-formed value. Forgery is what remote_trust = "verify" is for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "key/gemm_key.hpp"
#include "store/record.hpp"

namespace kd::daemon {

inline constexpr std::uint8_t kRemoteValueVersion = 1;

std::string remote_record_key(std::string_view prefix, std::string_view full_key_line);
std::string remote_lease_key(std::string_view prefix, std::string_view full_key_line);
// The key line of a record key under `prefix`; nullopt for any other key.
std::optional<std::string> key_line_of_remote_key(std::string_view prefix, std::string_view redis_key);

std::string encode_remote_value(const Record& record);

// Why a value from the tier was not used. Rejections (damage or a lie) and mismatches (a sound
// record of another environment) are counted apart. Names are stable: metrics labels.
enum class RemoteRejection : std::uint8_t {
  truncated,          // shorter than its header says
  bad_magic,          // not a value the tier writes
  unknown_version,    // a newer tier format
  checksum_mismatch,  // damaged
  wrong_key,          // stored under another key than the one it answers (moved or forged)
  bad_record,         // the record inside does not decode (serialize_record's own checks)
  bad_key_line,       // the record's key line does not parse or names no GPU
  failed_gate,        // this machine's validation gate refused it (remote_trust = verify)
};
std::string_view to_string(RemoteRejection r);

enum class RemoteMismatch : std::uint8_t {
  schema,           // a record schema this build does not read
  foreign_device,   // made for another GPU than this daemon's
  foreign_versions, // another driver or cuBLAS major (cuBLASLt: another cuBLASLt version)
};
std::string_view to_string(RemoteMismatch m);

// This machine, as records are compared with it. Zero / empty parts are not checked (a daemon
// without a GPU knows no device and no driver).
struct LocalEnvironment {
  std::optional<DevicePart> device;
  int driver_version = 0;        // cuDriverGetVersion
  std::size_t cublaslt_version = 0;  // cublasLtGetVersion, exact for cuBLASLt records
};
// What this process sees now: the driver and cuBLASLt if they load, and `device`.
LocalEnvironment local_environment(std::optional<DevicePart> device);

using RemoteDecode = std::variant<Record, RemoteRejection, RemoteMismatch>;
// Decodes the value stored under `full_key_line` and checks it fully: the wrapper, the record's
// own checksum and schema, that it answers exactly `full_key_line`, and that it matches `local`
// (the majors rule of CacheReader::lookup). Never throws (beyond std::bad_alloc).
RemoteDecode decode_remote_value(std::string_view value, std::string_view full_key_line,
                                 const LocalEnvironment& local);

}  // namespace kd::daemon
