// A read-only snapshot of a kernel cache for the inspecting subcommands (ls, show, stats, export).
// Unlike CacheReader it reaches every named database (trees, jobs) and reports damaged records
// instead of skipping them, and unlike CacheWriter it never creates anything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "store/record.hpp"

namespace kd::kdctl {

// The --cache-dir flag's value, or default_cache_dir() when it was not given (empty).
std::filesystem::path resolve_cache_dir(const std::string& flag);

// Stage one of the cache check (store/cache_check.hpp): throws kd::Error naming `dir` and the fix
// when it holds no cache (usage: pass --cache-dir or set KD_CACHE_DIR), cannot be read, or its
// data.mdb is empty, not LMDB or truncated (data: run kdctl doctor). Used by every subcommand that
// needs an existing cache.
void require_cache(const std::filesystem::path& dir);

// One record of the snapshot. `record` is the decoded record, or why it could not be decoded;
// a record stored under a line that is not its own key_line is reported as malformed_payload.
struct StoredRecord {
  std::string key_line;  // the LMDB key
  std::uint64_t stored_bytes = 0;  // serialized size
  std::variant<Record, RecordError> record;
};

// The key's parts a listing shows; nullopt for a line parse_key rejects or without a device part.
struct KeyParts {
  GemmKey key;
  std::string op;  // the first token: "gemm"
};
std::optional<KeyParts> split_key(std::string_view full_key_line);

// Any operator's key as a listing shows it (kdctl ls; issue 33): its shape line, device part and
// first token ("gemm", "rmsnorm", "layernorm", "softmax"), and for a GEMM its A type, for a row
// operator its dtype. nullopt for a line parse_op_key rejects or without a device part.
struct OpKeyParts {
  OpKey key;
  std::string op;
  std::string shape_line;
  DevicePart device;
  DType dtype = DType::f32;
};
std::optional<OpKeyParts> split_op_key(std::string_view full_key_line);

class CacheSnapshot {
public:
  // Opens `dir` read-only (without a lock file when the directory is not writable, as CacheReader
  // does). Throws kd::Error when there is no cache (require_cache), the cache check finds it
  // damaged (the message names the page and says to run kdctl doctor), or the cache has another
  // schema or cannot be opened (the LMDB error, with the path).
  explicit CacheSnapshot(const std::filesystem::path& dir);
  ~CacheSnapshot();
  CacheSnapshot(const CacheSnapshot&) = delete;
  CacheSnapshot& operator=(const CacheSnapshot&) = delete;

  const std::filesystem::path& dir() const noexcept;
  std::vector<StoredRecord> records() const;
  // A value of a named database ("trees", "jobs"); nullopt when absent or the database is missing.
  std::optional<std::string> get_raw(const char* db, std::string_view key) const;
  // Calls visit for each entry of a named database (nothing when it does not exist).
  void for_each_raw(const char* db,
                    const std::function<void(std::string_view, std::string_view)>& visit) const;
  std::uint64_t generation() const;
  // Size of data.mdb on disk.
  std::uint64_t data_file_bytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kd::kdctl
