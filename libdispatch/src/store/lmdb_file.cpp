#include "store/lmdb_file.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace kd::lmdb_file {

// The layout below is LMDB 0.9's; 1.0 changes the file format.
static_assert(MDB_VERSION_MAJOR == 0 && MDB_VERSION_MINOR == 9, "lmdb_file reads LMDB 0.9 data files");
static_assert(std::endian::native == std::endian::little && sizeof(void*) == 8,
              "lmdb_file reads the files of 64-bit little-endian hosts");

namespace {

// Offsets inside a page (MDB_page) and a meta page (MDB_meta after the page header).
constexpr std::size_t kPgnoAt = 0;
constexpr std::size_t kFlagsAt = 10;
constexpr std::size_t kLowerAt = 12;
constexpr std::size_t kUpperAt = 14;
constexpr std::size_t kOverflowCountAt = 12;
constexpr std::size_t kMetaAt = kPageHeaderBytes;
constexpr std::size_t kMagicAt = kMetaAt + 0;
constexpr std::size_t kVersionAt = kMetaAt + 4;
constexpr std::size_t kMapSizeAt = kMetaAt + 16;
constexpr std::size_t kFreeDbAt = kMetaAt + 24;
constexpr std::size_t kMainDbAt = kFreeDbAt + kDbBytes;
constexpr std::size_t kLastPageAt = kMainDbAt + kDbBytes;
constexpr std::size_t kTxnIdAt = kLastPageAt + 8;
constexpr std::size_t kMetaPageBytes = kTxnIdAt + 8;  // what a meta page's parse reads

constexpr std::uint16_t kTypeBits = kBranchPage | kLeafPage | kOverflowPage | kMetaPage | kLeaf2Page | kSubPage;
// Page numbers above this would overflow a byte offset at any page size.
constexpr std::uint64_t kMaxPgno = std::uint64_t{1} << 47;

template <class T>
T load(std::span<const std::byte> bytes, std::size_t at) noexcept {
  T value{};
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

bool is_page_size(std::uint32_t bytes) noexcept {
  return bytes >= kMinPageBytes && bytes <= kMaxPageBytes && std::has_single_bit(bytes);
}

std::optional<std::string> check_root(const DbInfo& db, std::string_view name, std::uint64_t last_page) {
  if (db.root == kNoPage) return std::nullopt;
  if (db.root < kFirstDataPage || db.root > last_page) {
    return fmt::format("its {} tree's root page {} lies outside pages 2..{}", name, db.root, last_page);
  }
  if (db.depth == 0 || db.depth > kMaxDepth) {
    return fmt::format("its {} tree claims depth {}", name, db.depth);
  }
  return std::nullopt;
}

}  // namespace

DbInfo parse_db_info(std::span<const std::byte, kDbBytes> bytes) {
  DbInfo db;
  db.pad = load<std::uint32_t>(bytes, 0);
  db.flags = load<std::uint16_t>(bytes, 4);
  db.depth = load<std::uint16_t>(bytes, 6);
  db.branch_pages = load<std::uint64_t>(bytes, 8);
  db.leaf_pages = load<std::uint64_t>(bytes, 16);
  db.overflow_pages = load<std::uint64_t>(bytes, 24);
  db.entries = load<std::uint64_t>(bytes, 32);
  db.root = load<std::uint64_t>(bytes, 40);
  return db;
}

std::variant<Meta, std::string> parse_meta(std::span<const std::byte> bytes, std::uint64_t page) {
  if (bytes.size() < kMetaPageBytes) return std::string("it is shorter than a meta page");
  if (load<std::uint64_t>(bytes, kPgnoAt) != page || (load<std::uint16_t>(bytes, kFlagsAt) & kMetaPage) == 0) {
    return std::string("it is not marked as a meta page");
  }
  if (load<std::uint32_t>(bytes, kMagicAt) != kMagic) return std::string("its LMDB magic number is wrong");
  if (const auto version = load<std::uint32_t>(bytes, kVersionAt); version != kDataVersion) {
    return fmt::format("it has LMDB data version {}, not {}", version, kDataVersion);
  }
  Meta m;
  m.page = page;
  m.map_bytes = load<std::uint64_t>(bytes, kMapSizeAt);
  m.free_db = parse_db_info(bytes.subspan(kFreeDbAt).first<kDbBytes>());
  m.main_db = parse_db_info(bytes.subspan(kMainDbAt).first<kDbBytes>());
  m.page_bytes = m.free_db.pad;
  m.last_page = load<std::uint64_t>(bytes, kLastPageAt);
  m.txnid = load<std::uint64_t>(bytes, kTxnIdAt);
  if (!is_page_size(m.page_bytes)) return fmt::format("its page size {} is impossible", m.page_bytes);
  if (m.last_page < 1 || m.last_page >= kMaxPgno) {
    return fmt::format("its last page {} is impossible", m.last_page);
  }
  if (auto bad = check_root(m.free_db, "free-page", m.last_page)) return *bad;
  if (auto bad = check_root(m.main_db, "main", m.last_page)) return *bad;
  return m;
}

const Meta& newest(const Meta& a, const Meta& b) noexcept {
  const Meta& zero = a.page == 0 ? a : b;
  const Meta& one = a.page == 0 ? b : a;
  return zero.txnid < one.txnid ? one : zero;
}

// ---------------------------------------------------------------------------------------------
// DataFile

std::variant<DataFile, int> DataFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return EINVAL;
  }
  return DataFile(path, fd, static_cast<std::uint64_t>(st.st_size));
}

DataFile::DataFile(DataFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_bytes_(other.size_bytes_) {}

DataFile& DataFile::operator=(DataFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_bytes_ = other.size_bytes_;
  }
  return *this;
}

DataFile::~DataFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool DataFile::read(std::uint64_t offset, std::span<std::byte> out) const noexcept {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

DataFile::Metas DataFile::read_metas() const {
  std::array<std::byte, kMetaPageBytes> buffer{};
  const auto meta_at = [&](std::uint64_t offset, std::uint64_t page) -> std::variant<Meta, std::string> {
    if (!read(offset, buffer)) return std::string("the file is too short to hold it");
    return parse_meta(buffer, page);
  };
  Metas metas{meta_at(0, 0), std::string()};
  if (const auto* first = std::get_if<Meta>(&metas.first)) {
    metas.second = meta_at(first->page_bytes, 1);
    return metas;
  }
  // Page 0 is damaged: page 1 sits at the page size, which LMDB takes from the OS (4 KiB on x86).
  metas.second = std::string("it was not found at any page size");
  for (std::uint32_t bytes = 4096; bytes <= kMaxPageBytes; bytes *= 2) {
    auto second = meta_at(bytes, 1);
    if (const auto* m = std::get_if<Meta>(&second); m != nullptr && m->page_bytes == bytes) {
      metas.second = std::move(second);
      break;
    }
  }
  return metas;
}

// ---------------------------------------------------------------------------------------------
// Page

std::variant<Page, std::string> Page::read(const DataFile& file, std::uint32_t page_bytes, std::uint64_t pgno) {
  if (pgno >= kMaxPgno) return fmt::format("page number {} is impossible", pgno);
  std::vector<std::byte> bytes(page_bytes);
  if (!file.read(pgno * page_bytes, bytes)) return std::string("it cannot be read (past the end of the file?)");
  return parse(std::move(bytes), pgno);
}

std::variant<Page, std::string> Page::parse(std::vector<std::byte> bytes, std::uint64_t pgno) {
  const std::span<const std::byte> b(bytes);
  const std::size_t page_bytes = b.size();
  if (page_bytes < kPageHeaderBytes) return std::string("it is shorter than a page header");
  if (const auto stored = load<std::uint64_t>(b, kPgnoAt); stored != pgno) {
    return fmt::format("its header names page {}", stored);
  }
  const auto type = static_cast<std::uint16_t>(load<std::uint16_t>(b, kFlagsAt) & kTypeBits);
  if (type != kBranchPage && type != kLeafPage) {
    return fmt::format("it is neither a branch nor a leaf page (flags 0x{:x})", type);
  }
  const std::size_t lower = load<std::uint16_t>(b, kLowerAt);
  const std::size_t upper = load<std::uint16_t>(b, kUpperAt);
  if (lower < kPageHeaderBytes || (lower - kPageHeaderBytes) % 2 != 0 || lower > upper || upper > page_bytes) {
    return fmt::format("its free-space bounds {}..{} are impossible", lower, upper);
  }
  Page page;
  page.pgno_ = pgno;
  page.branch_ = type == kBranchPage;
  const std::size_t count = (lower - kPageHeaderBytes) / 2;
  page.offsets_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = load<std::uint16_t>(b, kPageHeaderBytes + 2 * i);
    if (at < upper || at % 2 != 0 || at + kNodeHeaderBytes > page_bytes) {
      return fmt::format("node {} starts at impossible offset {}", i, at);
    }
    const std::size_t key_bytes = load<std::uint16_t>(b, at + 6);
    std::size_t data_bytes = 0;
    if (!page.branch_) {
      const std::uint16_t flags = load<std::uint16_t>(b, at + 4);
      data_bytes = (flags & kBigData) != 0
                       ? sizeof(std::uint64_t)
                       : (load<std::uint16_t>(b, at) | (std::size_t{load<std::uint16_t>(b, at + 2)} << 16));
    }
    if (key_bytes > page_bytes || data_bytes > page_bytes ||
        at + kNodeHeaderBytes + key_bytes + data_bytes > page_bytes) {
      return fmt::format("node {} runs past the end of the page", i);
    }
    page.offsets_.push_back(static_cast<std::uint16_t>(at));
  }
  page.bytes_ = std::move(bytes);
  return page;
}

Page::Node Page::node(std::size_t i) const {
  const std::span<const std::byte> b(bytes_);
  const std::size_t at = offsets_.at(i);
  const std::uint64_t lo = load<std::uint16_t>(b, at);
  const std::uint64_t hi = load<std::uint16_t>(b, at + 2);
  Node n;
  n.flags = load<std::uint16_t>(b, at + 4);
  const std::size_t key_bytes = load<std::uint16_t>(b, at + 6);
  n.key = std::string_view(reinterpret_cast<const char*>(b.data() + at + kNodeHeaderBytes), key_bytes);
  const std::size_t data_at = at + kNodeHeaderBytes + key_bytes;
  if (branch_) {
    n.pgno = lo | (hi << 16) | (std::uint64_t{n.flags} << 32);
    n.flags = 0;
    return n;
  }
  n.data_bytes = lo | (hi << 16);
  if ((n.flags & kBigData) != 0) {
    n.pgno = load<std::uint64_t>(b, data_at);
  } else {
    n.data = b.subspan(data_at, n.data_bytes);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Overflow pages and keys

std::uint64_t overflow_pages(std::uint64_t data_bytes, std::uint32_t page_bytes) noexcept {
  return (kPageHeaderBytes - 1 + data_bytes) / page_bytes + 1;
}

std::variant<std::uint32_t, std::string> read_overflow_header(const DataFile& file, std::uint32_t page_bytes,
                                                              std::uint64_t pgno) {
  std::array<std::byte, kPageHeaderBytes> header{};
  if (pgno >= kMaxPgno || !file.read(pgno * page_bytes, header)) {
    return std::string("it cannot be read (past the end of the file?)");
  }
  if (const auto stored = load<std::uint64_t>(header, kPgnoAt); stored != pgno) {
    return fmt::format("its header names page {}", stored);
  }
  if ((load<std::uint16_t>(header, kFlagsAt) & kTypeBits) != kOverflowPage) {
    return std::string("it is not marked as an overflow page");
  }
  return load<std::uint32_t>(header, kOverflowCountAt);
}

std::optional<std::string> read_overflow_data(const DataFile& file, std::uint32_t page_bytes, std::uint64_t pgno,
                                              std::uint64_t data_bytes) {
  if (pgno >= kMaxPgno || data_bytes > file.size_bytes()) return std::nullopt;
  std::string data(data_bytes, '\0');
  if (!file.read(pgno * page_bytes + kPageHeaderBytes, std::as_writable_bytes(std::span(data)))) return std::nullopt;
  return data;
}

int compare_keys(std::string_view a, std::string_view b) noexcept {
  const std::size_t common = std::min(a.size(), b.size());
  const int bytes = common == 0 ? 0 : std::memcmp(a.data(), b.data(), common);
  if (bytes != 0) return bytes;
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

std::optional<std::uint64_t> integer_key(std::string_view key) noexcept {
  if (key.size() != sizeof(std::uint64_t)) return std::nullopt;
  std::uint64_t value = 0;
  std::memcpy(&value, key.data(), sizeof(value));
  return value;
}

}  // namespace kd::lmdb_file
