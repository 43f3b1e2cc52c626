// Caches for benchmarks: one per size, written on first use into its own temporary directory and
// kept for the program's life, so that every benchmark of a size reads the same cache.
#pragma once

#include <filesystem>
#include <map>

#include "support/temp_dir.hpp"

namespace kd::test {

class CachePerSize {
public:
  // Writes a cache of `size` (records, or what the benchmark counts) into `dir`.
  using Fill = void (*)(const std::filesystem::path& dir, int size);
  explicit CachePerSize(Fill fill) : fill_(fill) {}

  // The cache directory of `size`, filled on the first call for it.
  const std::filesystem::path& of(int size) {
    auto [it, added] = caches_.try_emplace(size);
    if (added) {
      it->second.dir = it->second.temp.path() / "cache";
      fill_(it->second.dir, size);
    }
    return it->second.dir;
  }

private:
  struct Cache {
    TempDir temp;
    std::filesystem::path dir;
  };
  Fill fill_;
  std::map<int, Cache> caches_;
};

}  // namespace kd::test
