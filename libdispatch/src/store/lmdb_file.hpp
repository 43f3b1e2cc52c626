// LMDB's data file (data.mdb) read with pread, never mapped: whatever the bytes on disk hold, a
// read here returns data or nothing, and cannot fault the process (a mapped read past the end of a
// truncated file raises SIGBUS; a damaged page sends LMDB's own code to wild addresses or to an
// assertion abort). The cache check (cache_check.hpp) and kdctl doctor's salvage are built on it.
//
// The layout is LMDB 0.9's (mdb.c: MDB_page, MDB_node, MDB_db, MDB_meta; MDB_DEVEL off), in the
// host's byte order on a 64-bit little-endian host; the build checks LMDB's version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kd::lmdb_file {

inline constexpr std::uint32_t kMagic = 0xBEEFC0DE;
inline constexpr std::uint32_t kDataVersion = 1;
inline constexpr std::size_t kPageHeaderBytes = 16;  // pgno, pad, flags, lower/upper or page count
inline constexpr std::size_t kNodeHeaderBytes = 8;   // lo, hi, flags, key size
inline constexpr std::size_t kDbBytes = 48;          // MDB_db
inline constexpr std::uint64_t kNoPage = ~std::uint64_t{0};  // P_INVALID: an empty tree's root
inline constexpr std::uint64_t kFirstDataPage = 2;   // pages 0 and 1 are the meta pages
inline constexpr std::size_t kMaxKeyBytes = 511;     // MDB_MAXKEYSIZE
inline constexpr std::uint16_t kMaxDepth = 32;       // CURSOR_STACK: deeper trees cannot be read
inline constexpr std::uint32_t kMinPageBytes = 512;
inline constexpr std::uint32_t kMaxPageBytes = 65536;

// Page flags (mp_flags).
inline constexpr std::uint16_t kBranchPage = 0x01;
inline constexpr std::uint16_t kLeafPage = 0x02;
inline constexpr std::uint16_t kOverflowPage = 0x04;
inline constexpr std::uint16_t kMetaPage = 0x08;
inline constexpr std::uint16_t kLeaf2Page = 0x20;
inline constexpr std::uint16_t kSubPage = 0x40;
// Node flags (mn_flags of a leaf node).
inline constexpr std::uint16_t kBigData = 0x01;  // the data is on overflow pages
inline constexpr std::uint16_t kSubData = 0x02;  // the data is a named database's MDB_db
inline constexpr std::uint16_t kDupData = 0x04;  // sorted duplicates (kdispatch uses none)

// MDB_db: one tree.
struct DbInfo {
  std::uint32_t pad = 0;  // the free database's pad is the page size
  std::uint16_t flags = 0;
  std::uint16_t depth = 0;
  std::uint64_t branch_pages = 0;
  std::uint64_t leaf_pages = 0;
  std::uint64_t overflow_pages = 0;
  std::uint64_t entries = 0;
  std::uint64_t root = kNoPage;
};
DbInfo parse_db_info(std::span<const std::byte, kDbBytes> bytes);

// MDB_meta: the start of one snapshot. Pages 0 and 1 hold one each; LMDB reads the one with the
// larger txnid (page 0 on a tie).
struct Meta {
  std::uint64_t page = 0;  // 0 or 1
  std::uint32_t page_bytes = 0;
  std::uint64_t map_bytes = 0;
  DbInfo free_db;
  DbInfo main_db;
  // The snapshot's pages are [0, last_page]; pages LMDB allocated and freed in one transaction
  // count but are never written, so the file may end before the last ones.
  std::uint64_t last_page = 0;
  std::uint64_t txnid = 0;
};

// Parses the meta page `page` (0 or 1) from its first bytes. Returns why it is not one: wrong
// flags or page number, bad magic, another data version, an impossible page size or last page.
std::variant<Meta, std::string> parse_meta(std::span<const std::byte> bytes, std::uint64_t page);

// The meta page LMDB reads: the larger txnid, page 0 on a tie (mdb_env_pick_meta).
const Meta& newest(const Meta& a, const Meta& b) noexcept;

// A data file opened for reading. Move-only (owns the descriptor).
class DataFile {
public:
  // Opens `path` read-only. Returns the errno of open/fstat on failure.
  static std::variant<DataFile, int> open(const std::filesystem::path& path);
  DataFile(DataFile&& other) noexcept;
  DataFile& operator=(DataFile&& other) noexcept;
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;
  ~DataFile();

  const std::filesystem::path& path() const noexcept { return path_; }
  // The size when opened.
  std::uint64_t size_bytes() const noexcept { return size_bytes_; }
  // Reads exactly out.size() bytes at `offset`; false when the file is shorter (it may have
  // shrunk since it was opened) or the read fails (EIO). Never faults.
  bool read(std::uint64_t offset, std::span<std::byte> out) const noexcept;
  // The two meta pages, each parsed or with the reason it is not one. Page 1 is read at page 0's
  // page size, or at the first power of two from 4 KiB on that holds it when page 0 is damaged.
  struct Metas {
    std::variant<Meta, std::string> first, second;
  };
  Metas read_metas() const;

private:
  DataFile(std::filesystem::path path, int fd, std::uint64_t size_bytes) noexcept
      : path_(std::move(path)), fd_(fd), size_bytes_(size_bytes) {}
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_bytes_ = 0;
};

// One branch or leaf page in memory, its layout checked: the node offsets lie between the pointer
// array and the page end, and every node (header, key, inline data) lies inside the page.
class Page {
public:
  // Reads page `pgno` of `file` and checks its layout. Returns why it is not a usable branch or
  // leaf page (unreadable, wrong page number in its header, not a branch/leaf, bad offsets).
  static std::variant<Page, std::string> read(const DataFile& file, std::uint32_t page_bytes,
                                              std::uint64_t pgno);
  // Checks bytes already read (page_bytes of them).
  static std::variant<Page, std::string> parse(std::vector<std::byte> bytes, std::uint64_t pgno);

  std::uint64_t pgno() const noexcept { return pgno_; }
  bool is_branch() const noexcept { return branch_; }
  std::size_t size() const noexcept { return offsets_.size(); }

  struct Node {
    std::uint16_t flags = 0;
    std::string_view key;
    // Branch: the child page. Leaf with kBigData: the first overflow page.
    std::uint64_t pgno = kNoPage;
    // Leaf: the data's size (on overflow pages with kBigData).
    std::uint64_t data_bytes = 0;
    // Leaf without kBigData: the data itself.
    std::span<const std::byte> data;
  };
  // Node i < size(); views are valid while the Page lives.
  Node node(std::size_t i) const;

private:
  Page() = default;
  std::vector<std::byte> bytes_;
  std::vector<std::uint16_t> offsets_;
  std::uint64_t pgno_ = 0;
  bool branch_ = false;
};

// Pages an overflow value of `data_bytes` occupies (OVPAGES).
std::uint64_t overflow_pages(std::uint64_t data_bytes, std::uint32_t page_bytes) noexcept;

// The header of an overflow run's first page: why it is not one (wrong page number, flags), or
// its page count.
std::variant<std::uint32_t, std::string> read_overflow_header(const DataFile& file,
                                                              std::uint32_t page_bytes,
                                                              std::uint64_t pgno);
// The data of a big-data node: `data_bytes` bytes after the header of page `pgno`; nullopt when
// the file does not hold them.
std::optional<std::string> read_overflow_data(const DataFile& file, std::uint32_t page_bytes,
                                              std::uint64_t pgno, std::uint64_t data_bytes);

// LMDB's default key order (mdb_cmp_memn): bytes, then length. Integer keys (the free database,
// MDB_INTEGERKEY) compare as unsigned 64-bit numbers.
int compare_keys(std::string_view a, std::string_view b) noexcept;
std::optional<std::uint64_t> integer_key(std::string_view key) noexcept;

}  // namespace kd::lmdb_file
