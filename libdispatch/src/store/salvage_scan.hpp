// The raw scan under kdctl doctor: every key/value pair that can still be read from a damaged
// LMDB data file, found without LMDB (lmdb_file.hpp: pread, bounds-checked, cannot fault).
//
// Three passes, in order of trust:
//   1. the trees of the newest meta page, tolerantly: a page that does not parse is skipped, and the
//      pages below it are left to pass 3;
//   2. the trees of the older meta page: LMDB keeps that snapshot intact until the next commit, so
//      it recovers what a damaged newest snapshot lost (one commit older);
//   3. every page that no tree reached and that the free-page list does not name ("orphans": leaves
//      under a damaged branch page, or every leaf when both meta pages are gone), read in file order;
//      overflow runs are skipped by their headers, so their contents are never taken for pages.
// Entries reach the caller in that order, each with where it was found; which database an orphan
// belonged to is not known (the caller classifies it by its content: records carry a checksum).
// Stale pages of old snapshots can look like orphans when the free-page list is damaged too; the
// caller prefers tree entries and, among orphans, the newest version.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kd {

struct SalvagedEntry {
  enum class Found : std::uint8_t { newest_tree, older_tree, orphan_page };
  Found found = Found::orphan_page;
  std::string_view db;   // the named database ("records", "jobs", ...); empty for an orphan
  std::string_view key;
  // The value; nullopt when its overflow pages cannot be read or are not where the node says.
  std::optional<std::string_view> value;
  std::uint64_t page = 0;  // the leaf page holding the key
};

struct SalvageSummary {
  std::uint64_t file_bytes = 0;
  std::uint32_t page_bytes = 0;  // from a meta page, else guessed from the page headers
  std::uint64_t pages = 0;       // whole pages in the file
  bool page_size_guessed = false;
  int usable_metas = 0;               // meta pages that parsed (0, 1 or 2)
  std::uint64_t tree_pages = 0;       // branch and leaf pages reached from a meta page
  std::uint64_t orphan_leaves = 0;    // leaf pages found by the scan
  std::uint64_t unreadable_pages = 0; // pages a tree pointed to, or the scan met, that did not parse
  std::vector<std::string> notes;     // what was broken (the first few), for the report
};

// Scans `file` (see above) and calls `visit` for every entry; the views are valid during the call
// only. Throws kd::Error (system) only when the file cannot be opened; nothing inside the file
// makes it throw or fault.
SalvageSummary scan_for_salvage(const std::filesystem::path& file,
                                const std::function<void(const SalvagedEntry&)>& visit);

}  // namespace kd
