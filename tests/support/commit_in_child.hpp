// Commits records to a cache from a forked child process, as another writer (the daemon, kdctl)
// would: LMDB allows one environment per directory per process, and a test's own reader must see
// the commit arrive from outside.
#pragma once

#include <filesystem>
#include <vector>

#include "store/record.hpp"

namespace kd::test {

// Commits `records` to the cache at `cache` (created if absent) in one child, each in its own
// transaction. Returns the child's exit status: 0 committed, 3 the writer threw, 128 killed.
int commit_in_child(const std::filesystem::path& cache, const std::vector<Record>& records);

}  // namespace kd::test
