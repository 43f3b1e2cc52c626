#include "support/cache_damage.hpp"

#include <lmdb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "support/text_file.hpp"

namespace kd::test {
namespace {

namespace fs = std::filesystem;

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(fmt::format("{}: {}", what, mdb_strerror(rc)));
}

}  // namespace

std::vector<EntryPages> map_entries(const fs::path& dir, const std::vector<std::string>& dbs) {
  MDB_env* env = nullptr;
  check(mdb_env_create(&env), "mdb_env_create");
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_mapsize(env, std::size_t{1} << 34);
  std::vector<EntryPages> out;
  MDB_txn* txn = nullptr;
  try {
    check(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644), "mdb_env_open");
    MDB_stat stat{};
    mdb_env_stat(env, &stat);
    const std::uint64_t psize = stat.ms_psize;
    check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin");
    for (const auto& name : dbs) {
      MDB_dbi dbi = 0;
      if (mdb_dbi_open(txn, name.c_str(), 0, &dbi) != 0) continue;
      MDB_cursor* cur = nullptr;
      check(mdb_cursor_open(txn, dbi, &cur), "mdb_cursor_open");
      MDB_val k{}, v{};
      for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        EntryPages e{name, std::string(static_cast<const char*>(k.mv_data), k.mv_size),
                     std::string(static_cast<const char*>(v.mv_data), v.mv_size), {}};
        // The map is page-aligned; a page's header starts with its number (MDB_page.mp_pgno).
        const auto page_of = [&](const void* p) {
          const auto at = reinterpret_cast<std::uintptr_t>(p);
          std::uint64_t pgno = 0;
          std::memcpy(&pgno, reinterpret_cast<const void*>(at - at % psize), sizeof(pgno));
          return pgno;
        };
        const std::uint64_t leaf = page_of(k.mv_data);
        e.pages.push_back(leaf);
        const auto at = reinterpret_cast<std::uintptr_t>(v.mv_data);
        if (at - at % psize != reinterpret_cast<std::uintptr_t>(k.mv_data) - reinterpret_cast<std::uintptr_t>(k.mv_data) % psize) {
          // An overflow run: its first page's header sits right before the value.
          const std::uint64_t first = page_of(v.mv_data);
          const std::uint64_t pages = (16 - 1 + v.mv_size) / psize + 1;
          for (std::uint64_t p = first; p < first + pages; ++p) e.pages.push_back(p);
        }
        out.push_back(std::move(e));
      }
      mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
  } catch (...) {
    if (txn != nullptr) mdb_txn_abort(txn);
    mdb_env_close(env);
    throw;
  }
  mdb_env_close(env);
  return out;
}

std::uint32_t page_bytes_of(const fs::path& data_file) {
  // The meta page's mm_psize, 40 bytes in: the header alone, not the whole file.
  char head[44] = {};
  std::ifstream in(data_file, std::ios::binary);
  in.read(head, sizeof head);
  std::uint32_t page_bytes = 0;
  if (in.gcount() == static_cast<std::streamsize>(sizeof head)) std::memcpy(&page_bytes, head + 40, sizeof(page_bytes));
  if (page_bytes == 0) throw std::runtime_error("no page size in " + data_file.string());
  return page_bytes;
}

Damage damage_file(const fs::path& file, std::uint32_t seed) {
  const std::uint32_t page_bytes = page_bytes_of(file);
  std::string bytes = read_text(file);
  const std::uint64_t size = bytes.size();
  std::mt19937_64 rng(0x5eed0000u + seed);
  const auto touch = [&](Damage& d, std::uint64_t first_byte, std::uint64_t end_byte) {
    for (std::uint64_t p = first_byte / page_bytes; p * page_bytes < end_byte; ++p) d.pages.insert(p);
  };
  Damage d;
  d.kind = static_cast<DamageKind>(seed % 3);
  switch (d.kind) {
    case DamageKind::truncate: {
      // Spread the cuts: inside the meta pages, on a page boundary, anywhere.
      const std::uint32_t where = (seed / 3) % 4;
      if (where == 0) {
        d.cut_bytes = rng() % (2 * page_bytes);
      } else if (where == 1) {
        d.cut_bytes = (rng() % (size / page_bytes)) * page_bytes;
      } else {
        d.cut_bytes = rng() % size;
      }
      bytes.resize(d.cut_bytes);
      touch(d, d.cut_bytes, size);
      d.description = fmt::format("truncated from {} to {} bytes", size, d.cut_bytes);
      break;
    }
    case DamageKind::zero_ranges: {
      const int ranges = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < ranges; ++i) {
        const std::uint64_t length = 1 + rng() % 16384;
        const std::uint64_t at = rng() % size;
        const std::uint64_t end = std::min(size, at + length);
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(end), '\0');
        touch(d, at, end);
        d.description += fmt::format("zeroed {}..{} ", at, end);
      }
      break;
    }
    case DamageKind::flip_bits: {
      for (int i = 0; i < 100; ++i) {
        const std::uint64_t at = rng() % size;
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        touch(d, at, at + 1);
      }
      d.description = "100 flipped bits";
      break;
    }
  }
  write_text(file, bytes);
  return d;
}

bool untouched(const EntryPages& entry, const Damage& damage) {
  return std::none_of(entry.pages.begin(), entry.pages.end(), [&](std::uint64_t p) { return damage.pages.count(p) != 0; });
}

}  // namespace kd::test
