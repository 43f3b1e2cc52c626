// The cache check: decides, without mapping the file, whether LMDB can read a cache's data.mdb
// without faulting or aborting. Every process that opens a cache runs it first (CacheReader in
// applications, CacheWriter in the daemon and kdctl, kdctl's read-only snapshot); ARCHITECTURE.md
// ("A damaged cache never crashes a process") has the safety argument and what it does not cover.
//
// Two stages:
//   inspect_cache_dir: the directory and file can be read, the file is not empty, both meta pages
//     are LMDB meta pages, and the file is as long as the newest snapshot needs (LMDB maps the file
//     and reads past a truncated end with SIGBUS).
//   check_data_file / check_open_snapshot: walks the trees of one snapshot page by page with pread
//     (lmdb_file.hpp): every page inside the snapshot, a branch or leaf page where the tree needs
//     one, at the tree's depth, with valid node offsets and sizes, keys in order and inside their
//     parent's separators, no page reached twice, big data inside the snapshot; with
//     CheckScope::everything also the free-page tree, the overflow headers, the trees' page and
//     entry counts, and that every page is used or free exactly once (what LMDB's writer and its
//     compacting copy rely on).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "store/lmdb.hpp"

namespace kd {

enum class CheckScope {
  // What applications read (CacheReader): the main tree and the records and meta trees; big data
  // is checked to lie inside the snapshot, not read.
  applications,
  // Everything LMDB may touch, its writer included. Used by the daemon, kdctl and doctor.
  everything,
};

enum class CacheProblem {
  none,
  no_directory,          // the cache directory does not exist
  unreadable_directory,  // permission (or I/O) error listing the directory
  no_data_file,          // the directory holds no data.mdb
  unreadable_data_file,  // data.mdb cannot be opened or read
  empty,                 // data.mdb has 0 bytes
  not_lmdb,              // a meta page is not an LMDB meta page
  truncated,             // shorter than its newest snapshot needs
  damaged,               // the walk found a broken page or tree
  snapshot_moved,        // check_data_file(txnid): no meta page carries that snapshot any more
};
std::string_view to_string(CacheProblem p);

struct CacheCheck {
  CacheProblem problem = CacheProblem::none;
  std::string what;  // the problem in words, naming the file; empty when none
  std::string fix;   // what the user can do about it; empty when none
  std::uint64_t txnid = 0;          // the snapshot checked
  std::uint64_t pages_checked = 0;  // branch, leaf and overflow-header pages read
  bool ok() const noexcept { return problem == CacheProblem::none; }
  // A damaged file: doctor salvages it, the daemon moves it aside.
  bool damaged() const noexcept;
  // "<what>: <fix>", or what alone.
  std::string message() const;
};

// The file of a cache directory.
std::filesystem::path data_file_of(const std::filesystem::path& dir);

// Stage one for directory `dir`. Cheap: a stat and two small reads.
CacheCheck inspect_cache_dir(const std::filesystem::path& dir);

// Stages one and two on a data file that no writer changes while it runs (a file moved aside, a
// backup copy, or a cache whose daemon is stopped), or on snapshot `txnid` of a live file whose
// pages a read transaction keeps (see check_open_snapshot). Never throws for anything the file
// holds.
CacheCheck check_data_file(const std::filesystem::path& file, CheckScope scope,
                           std::optional<std::uint64_t> txnid = std::nullopt);

// Both stages on the cache in `dir` as it is now: stage one, then stage two through a read
// transaction of a read-only environment opened for the purpose and closed again (so a concurrent
// writer cannot make a sound file look damaged). No process of the caller's may have the
// environment open. LMDB refusing the file (MDB_INVALID, MDB_CORRUPTED) reads as damaged; other
// failures to open it (permissions, memory) throw kd::Error.
CacheCheck check_cache_dir(const std::filesystem::path& dir, CheckScope scope);

// Stage two for the snapshot that `txn` (a read-only transaction of `env`) reads: its reader slot
// keeps the writer from reusing the snapshot's pages while the walk reads them. When the writer
// has moved two commits on, the transaction is reset and renewed (a fresh snapshot) and checked
// again. Call it before LMDB reads anything of the snapshot (mdb_dbi_open included); stage one
// must have passed before the environment was opened.
CacheCheck check_open_snapshot(const lmdb::Env& env, lmdb::Txn& txn, CheckScope scope);

}  // namespace kd
