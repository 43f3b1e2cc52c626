// The compile cache: NVRTC outputs by a hash of everything that determines them, in memory and
// optionally in a directory that outlives the process (the daemon's, shared by its restarts).
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "compile/nvrtc_compiler.hpp"

namespace kd::search {

// 32 lowercase hex digits: XXH3-128 of the source, the name (it is in the log and the line
// info), the arch, the full NVRTC option list, the NVRTC version and the embedded contract headers.
std::string compile_cache_key(const CompileRequest& request);

enum class CacheSource { none, memory, disk };

struct CachedOutput {
  std::shared_ptr<const CompileOutput> output;
  CacheSource source = CacheSource::none;
};

// Holds finished compiles only (CompileStatus ok or compile_error, with their logs): a timeout or
// a crash may not repeat, so it is never cached. Thread-safe.
//
// Directory layout: <key>.cubin, <key>.ptx, <key>.log and <key>.meta (JSON: status, compile_us),
// each written to a temporary name and renamed into place, the .meta last, so a reader that finds
// the .meta finds the rest complete. Several processes may share a directory.
class CompileCache {
public:
  // `directory` is created when missing (throws kd::Error when it cannot be). At most
  // `memory_entries` outputs stay in memory, the oldest dropped first.
  CompileCache(std::optional<std::filesystem::path> directory, std::size_t memory_entries);

  std::optional<CachedOutput> find(const std::string& key);
  // Stores in memory and, when there is a directory, on disk. A disk write failure is not an
  // error (the cache is an optimisation); it is logged.
  void store(const std::string& key, std::shared_ptr<const CompileOutput> output);

private:
  std::optional<CompileOutput> read_disk(const std::string& key) const;
  void write_disk(const std::string& key, const CompileOutput& output) const;
  void remember(const std::string& key, std::shared_ptr<const CompileOutput> output);

  std::optional<std::filesystem::path> directory_;
  std::size_t memory_entries_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const CompileOutput>> memory_;
  std::deque<std::string> insertion_order_;
};

}  // namespace kd::search
