// Damage for the damaged-cache tests: where each entry of an intact cache lives (read through LMDB
// itself, independently of the code under test), and reproducible damage to a copy of its file
// (truncation, zeroed ranges, bit flips) that reports which pages it touched. An entry whose pages
// are all untouched must be salvaged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace kd::test {

struct EntryPages {
  std::string db;
  std::string key;
  std::string value;
  std::vector<std::uint64_t> pages;  // the leaf page holding the key, then any overflow pages
};

// Every entry of the named databases `dbs` of the cache in `dir`, with its pages: the pages of the
// key and value pointers LMDB hands out into its map. No other environment on `dir` may be open in
// this process.
std::vector<EntryPages> map_entries(const std::filesystem::path& dir, const std::vector<std::string>& dbs);

// The page size an LMDB data file's first meta page records.
std::uint32_t page_bytes_of(const std::filesystem::path& data_file);

enum class DamageKind { truncate, zero_ranges, flip_bits };

struct Damage {
  DamageKind kind = DamageKind::truncate;
  std::set<std::uint64_t> pages;  // every page any damaged byte lies in (truncation: from the cut)
  std::uint64_t cut_bytes = 0;    // truncate: the new size
  std::string description;
};

// Applies damage number `seed` (the kind is seed % 3) to `file`: a truncation at a size spread
// over the file (inside the meta pages, on and off page boundaries), 1-4 zeroed ranges of up to
// 16 KiB at random offsets, or 100 flipped bits.
Damage damage_file(const std::filesystem::path& file, std::uint32_t seed);

// Whether an entry lies wholly on pages `damage` left alone.
bool untouched(const EntryPages& entry, const Damage& damage);

}  // namespace kd::test
