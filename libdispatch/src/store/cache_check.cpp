#include "store/cache_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <lmdb.h>

#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "store/lmdb_file.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace lmdb_file;

// The named trees CacheReader reads (cache_store.cpp).
constexpr std::array<std::string_view, 2> kApplicationTrees{"records", "meta"};
constexpr std::uint16_t kIntegerKeyFlag = 0x08;  // MDB_INTEGERKEY, set on the free-page tree
// A snapshot that moves on during the check is taken again this often before giving up.
constexpr int kSnapshotAttempts = 8;

constexpr std::array<Named<CacheProblem>, 10> kProblemNames{{
    {CacheProblem::none, "none"},
    {CacheProblem::no_directory, "no_directory"},
    {CacheProblem::unreadable_directory, "unreadable_directory"},
    {CacheProblem::no_data_file, "no_data_file"},
    {CacheProblem::unreadable_data_file, "unreadable_data_file"},
    {CacheProblem::empty, "empty"},
    {CacheProblem::not_lmdb, "not_lmdb"},
    {CacheProblem::truncated, "truncated"},
    {CacheProblem::damaged, "damaged"},
    {CacheProblem::snapshot_moved, "snapshot_moved"},
}};

std::string salvage_fix(const fs::path& file) {
  return fmt::format("run kdctl doctor --cache-dir {} to salvage its records and jobs",
                     file.parent_path().string());
}

CacheCheck failed(CacheProblem problem, std::string what, std::string fix) {
  CacheCheck c;
  c.problem = problem;
  c.what = std::move(what);
  c.fix = std::move(fix);
  return c;
}

CacheCheck unreadable(CacheProblem problem, const fs::path& path, int err) {
  const bool denied = err == EACCES || err == EPERM;
  return failed(problem,
                fmt::format("cannot read {}{}: {}", problem == CacheProblem::unreadable_directory ? "cache directory " : "",
                            path.string(), denied ? "permission denied" : std::strerror(err)),
                denied ? "run as the cache's owner or a member of its group" : "");
}

// The meta pages of an open file: both must be LMDB meta pages (LMDB refuses the file otherwise).
std::variant<std::pair<Meta, Meta>, CacheCheck> read_both_metas(const DataFile& file) {
  const fs::path& path = file.path();
  if (file.size_bytes() == 0) {
    return failed(CacheProblem::empty, fmt::format("{} is empty (0 bytes): not a kdispatch cache", path.string()),
                  "remove it (kdispatchd then starts a new cache), or run kdctl doctor");
  }
  auto metas = file.read_metas();
  const auto* first = std::get_if<Meta>(&metas.first);
  const auto* second = std::get_if<Meta>(&metas.second);
  if (first == nullptr && second == nullptr) {
    return failed(CacheProblem::not_lmdb,
                  fmt::format("{} is not an LMDB file (meta page 0: {}; meta page 1: {})", path.string(),
                              std::get<std::string>(metas.first), std::get<std::string>(metas.second)),
                  "remove it, or run kdctl doctor to salvage what it holds");
  }
  if (first == nullptr || second == nullptr) {
    const int bad = first == nullptr ? 0 : 1;
    return failed(CacheProblem::damaged,
                  fmt::format("{} is damaged: meta page {} is unusable ({})", path.string(), bad,
                              std::get<std::string>(bad == 0 ? metas.first : metas.second)),
                  salvage_fix(path));
  }
  if (first->page_bytes != second->page_bytes) {
    return failed(CacheProblem::damaged,
                  fmt::format("{} is damaged: its meta pages disagree on the page size ({} and {})", path.string(),
                              first->page_bytes, second->page_bytes),
                  salvage_fix(path));
  }
  return std::pair{*first, *second};
}

// A file that ends before a page the snapshot reaches. Not the snapshot's last page number: LMDB
// counts pages it allocated and freed again in one transaction, which it never writes, so after a
// kill -9 a sound file may end before them (measured: 711 of 712 pages).
CacheCheck truncated(const DataFile& file, const Meta& meta, std::uint64_t needed_bytes);

// LMDB writes whole pages: a file that ends inside one was cut.
CacheCheck check_page_boundary(const DataFile& file, const Meta& meta) {
  const std::uint64_t rest = file.size_bytes() % meta.page_bytes;
  if (rest == 0) return {};
  return truncated(file, meta, file.size_bytes() - rest + meta.page_bytes);
}

CacheCheck truncated(const DataFile& file, const Meta& meta, std::uint64_t needed_bytes) {
  return failed(CacheProblem::truncated,
                fmt::format("{} is truncated: it has {} bytes, but its newest snapshot needs {} ({} pages of {} bytes)",
                            file.path().string(), file.size_bytes(), needed_bytes, needed_bytes / meta.page_bytes,
                            meta.page_bytes),
                salvage_fix(file.path()));
}

// Walks the trees of one snapshot (see cache_check.hpp for what it checks).
class Walker {
public:
  Walker(const DataFile& file, const Meta& meta, CheckScope scope)
      : file_(file), meta_(meta), scope_(scope), used_(meta.last_page + 1, false) {
    used_[0] = used_[1] = true;
  }

  // Empty when the snapshot is sound, else where and what is wrong.
  std::optional<std::string> run() {
    std::vector<std::pair<std::string, DbInfo>> named;
    const auto collect = [&](const Page::Node& n) -> std::optional<std::string> {
      if ((n.flags & kSubData) == 0) return std::nullopt;  // a plain value in the main tree
      if ((n.flags & (kBigData | kDupData)) != 0 || n.data.size() != kDbBytes) {
        return fmt::format("the entry for database \"{}\" is malformed", printable(n.key));
      }
      named.emplace_back(std::string(n.key), parse_db_info(n.data.first<kDbBytes>()));
      return std::nullopt;
    };
    if (auto bad = walk("main", meta_.main_db, KeyOrder::bytes, collect)) return bad;
    for (const auto& [name, db] : named) {
      const bool read_by_applications =
          std::find(kApplicationTrees.begin(), kApplicationTrees.end(), name) != kApplicationTrees.end();
      if (scope_ == CheckScope::applications && !read_by_applications) continue;
      if (db.flags != 0) return fmt::format("database \"{}\" has flags 0x{:x} that kdispatch never sets", name, db.flags);
      if (auto bad = check_db_root(name, db)) return bad;
      if (auto bad = walk(name, db, KeyOrder::bytes, nullptr)) return bad;
    }
    if (scope_ == CheckScope::applications) return std::nullopt;
    if ((meta_.free_db.flags & kIntegerKeyFlag) == 0) return std::string("the free-page tree lost its integer-key flag");
    std::vector<bool> free(meta_.last_page + 1, false);
    const auto free_list = [&](const Page::Node& n) { return read_free_list(n, free); };
    if (auto bad = walk("free-page", meta_.free_db, KeyOrder::integer, free_list)) return bad;
    return check_accounting(free);
  }

  std::uint64_t pages_checked() const noexcept { return pages_checked_; }
  // The file length the snapshot's reachable pages need, when the file is shorter (run() failed).
  std::optional<std::uint64_t> needed_bytes() const noexcept { return needed_bytes_; }

private:
  enum class KeyOrder { bytes, integer };
  using LeafVisitor = std::function<std::optional<std::string>(const Page::Node&)>;
  struct Counts {
    std::uint64_t branch = 0, leaf = 0, overflow = 0, entries = 0;
  };
  struct Bounds {
    std::optional<std::string_view> low, high;  // low <= key < high
  };

  static std::string printable(std::string_view key) {
    std::string out;
    for (char c : key.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return out;
  }

  std::optional<std::string> check_db_root(const std::string& name, const DbInfo& db) const {
    if (db.root == kNoPage) return std::nullopt;
    if (db.root < kFirstDataPage || db.root > meta_.last_page) {
      return fmt::format("database \"{}\" has its root at page {}, outside pages 2..{}", name, db.root,
                         meta_.last_page);
    }
    if (db.depth == 0 || db.depth > kMaxDepth) return fmt::format("database \"{}\" claims depth {}", name, db.depth);
    return std::nullopt;
  }

  std::optional<std::string> walk(std::string_view name, const DbInfo& db, KeyOrder order, const LeafVisitor& visit) {
    Counts counts;
    if (db.root != kNoPage) {
      if (auto bad = visit_page(name, db, db.root, 1, Bounds{}, order, counts, visit)) return bad;
    } else if (db.depth != 0 || db.entries != 0) {
      return fmt::format("the {} tree is empty but claims depth {} and {} entries", name, db.depth, db.entries);
    }
    if (scope_ == CheckScope::everything &&
        (counts.branch != db.branch_pages || counts.leaf != db.leaf_pages ||
         counts.overflow != db.overflow_pages || counts.entries != db.entries)) {
      return fmt::format(
          "the {} tree holds {} branch, {} leaf and {} overflow pages and {} entries, but its header says {}, "
          "{}, {} and {}",
          name, counts.branch, counts.leaf, counts.overflow, counts.entries, db.branch_pages, db.leaf_pages,
          db.overflow_pages, db.entries);
    }
    return std::nullopt;
  }

  std::optional<std::string> claim(std::uint64_t pgno, std::string_view name) {
    if (pgno < kFirstDataPage || pgno > meta_.last_page) {
      return fmt::format("the {} tree points to page {}, outside pages 2..{}", name, pgno, meta_.last_page);
    }
    if (used_[pgno]) return fmt::format("page {} is reached twice (from the {} tree)", pgno, name);
    used_[pgno] = true;
    return past_end(pgno, 1, name);
  }

  // Pages [pgno, pgno + count) that the file does not hold: the file is truncated.
  std::optional<std::string> past_end(std::uint64_t pgno, std::uint64_t count, std::string_view name) {
    const std::uint64_t end = (pgno + count) * meta_.page_bytes;
    if (end <= file_.size_bytes()) return std::nullopt;
    needed_bytes_ = end;
    return fmt::format("the {} tree reaches page {}, past the end of the file", name, pgno + count - 1);
  }

  int compare(std::string_view a, std::string_view b, KeyOrder order) const {
    if (order == KeyOrder::bytes) return compare_keys(a, b);
    const auto x = integer_key(a), y = integer_key(b);
    return *x < *y ? -1 : *x > *y ? 1 : 0;
  }

  std::optional<std::string> check_key(std::string_view key, KeyOrder order, const Bounds& bounds,
                                       std::optional<std::string_view> previous) const {
    if (key.size() > kMaxKeyBytes) return fmt::format("a key of {} bytes (at most {})", key.size(), kMaxKeyBytes);
    if (order == KeyOrder::integer && !integer_key(key)) return std::string("a free-page key that is not a number");
    if (previous && compare(*previous, key, order) >= 0) return std::string("keys out of order");
    if (bounds.low && compare(key, *bounds.low, order) < 0) return std::string("a key below its parent's separator");
    if (bounds.high && compare(key, *bounds.high, order) >= 0) return std::string("a key above its parent's separator");
    return std::nullopt;
  }

  std::optional<std::string> visit_page(std::string_view name, const DbInfo& db, std::uint64_t pgno, std::uint16_t level,
                                        const Bounds& bounds, KeyOrder order, Counts& counts, const LeafVisitor& visit) {
    if (auto bad = claim(pgno, name)) return bad;
    ++pages_checked_;
    auto read = Page::read(file_, meta_.page_bytes, pgno);
    const auto where = [&](std::string_view what) { return fmt::format("page {} of the {} tree: {}", pgno, name, what); };
    if (const auto* why = std::get_if<std::string>(&read)) return where(*why);
    const Page& page = std::get<Page>(read);
    if (page.is_branch() != (level < db.depth)) {
      return where(page.is_branch() ? "a branch page where the tree's depth puts leaves"
                                    : "a leaf page above the tree's depth");
    }
    const bool free_tree = order == KeyOrder::integer;
    if (page.size() < (page.is_branch() && !free_tree ? 2u : 1u)) return where("too few entries");
    if (page.is_branch()) {
      ++counts.branch;
      for (std::size_t i = 0; i < page.size(); ++i) {
        Bounds child = bounds;
        if (i > 0) {
          const auto key = page.node(i).key;
          if (auto bad = check_key(key, order, bounds, i > 1 ? std::optional(page.node(i - 1).key) : std::nullopt)) {
            return where(*bad);
          }
          child.low = key;
        }
        if (i + 1 < page.size()) child.high = page.node(i + 1).key;
        if (auto bad = visit_page(name, db, page.node(i).pgno, level + 1, child, order, counts, visit)) return bad;
      }
      return std::nullopt;
    }
    ++counts.leaf;
    for (std::size_t i = 0; i < page.size(); ++i) {
      const Page::Node n = page.node(i);
      if (auto bad = check_key(n.key, order, bounds, i > 0 ? std::optional(page.node(i - 1).key) : std::nullopt)) {
        return where(*bad);
      }
      if (auto bad = check_leaf_node(name, n, counts)) return where(*bad);
      ++counts.entries;
      if (visit) {
        if (auto bad = visit(n)) return where(*bad);
      }
    }
    return std::nullopt;
  }

  std::optional<std::string> check_leaf_node(std::string_view name, const Page::Node& n, Counts& counts) {
    if ((n.flags & kDupData) != 0 || (n.flags & ~(kBigData | kSubData | kDupData)) != 0) {
      return fmt::format("an entry with flags 0x{:x}", n.flags);
    }
    if ((n.flags & kSubData) != 0 && name != "main") return std::string("a database entry outside the main tree");
    if ((n.flags & kBigData) == 0) return std::nullopt;
    const std::uint64_t pages = overflow_pages(n.data_bytes, meta_.page_bytes);
    if (n.pgno < kFirstDataPage || n.pgno > meta_.last_page || pages > meta_.last_page - n.pgno + 1) {
      return fmt::format("a value of {} bytes at page {}, outside pages 2..{}", n.data_bytes, n.pgno, meta_.last_page);
    }
    if (auto bad = past_end(n.pgno, pages, name)) return bad;
    if (scope_ == CheckScope::applications) return std::nullopt;
    ++pages_checked_;
    auto header = read_overflow_header(file_, meta_.page_bytes, n.pgno);
    if (const auto* why = std::get_if<std::string>(&header)) {
      return fmt::format("the value at page {}: {}", n.pgno, *why);
    }
    if (std::get<std::uint32_t>(header) != pages) {
      return fmt::format("the value at page {} spans {} pages, its header says {}", n.pgno, pages,
                         std::get<std::uint32_t>(header));
    }
    for (std::uint64_t p = n.pgno; p < n.pgno + pages; ++p) {
      if (auto bad = claim(p, name)) return bad;
    }
    counts.overflow += pages;
    return std::nullopt;
  }

  // A free-page record: a count, then that many page numbers.
  std::optional<std::string> read_free_list(const Page::Node& n, std::vector<bool>& free) const {
    std::string owned;
    std::string_view bytes(reinterpret_cast<const char*>(n.data.data()), n.data.size());
    if ((n.flags & kBigData) != 0) {
      auto data = read_overflow_data(file_, meta_.page_bytes, n.pgno, n.data_bytes);
      if (!data) return std::string("a free-page list that cannot be read");
      owned = std::move(*data);
      bytes = owned;
    }
    if (bytes.size() < sizeof(std::uint64_t)) return std::string("a free-page list without a count");
    std::uint64_t count = 0;
    std::memcpy(&count, bytes.data(), sizeof(count));
    if (count > bytes.size() / sizeof(std::uint64_t) - 1) return std::string("a free-page list longer than its record");
    for (std::uint64_t i = 1; i <= count; ++i) {
      std::uint64_t pgno = 0;
      std::memcpy(&pgno, bytes.data() + i * sizeof(pgno), sizeof(pgno));
      if (pgno < kFirstDataPage || pgno > meta_.last_page) {
        return fmt::format("free page {} lies outside pages 2..{}", pgno, meta_.last_page);
      }
      if (free[pgno]) return fmt::format("page {} is listed free twice", pgno);
      free[pgno] = true;
    }
    return std::nullopt;
  }

  std::optional<std::string> check_accounting(const std::vector<bool>& free) const {
    for (std::uint64_t p = kFirstDataPage; p <= meta_.last_page; ++p) {
      if (used_[p] && free[p]) return fmt::format("page {} is both in use and listed free", p);
      if (!used_[p] && !free[p]) return fmt::format("page {} is neither in use nor listed free", p);
    }
    return std::nullopt;
  }

  const DataFile& file_;
  const Meta& meta_;
  CheckScope scope_;
  std::vector<bool> used_;
  std::uint64_t pages_checked_ = 0;
  std::optional<std::uint64_t> needed_bytes_;
};

CacheCheck check_file(const DataFile& file, CheckScope scope, std::optional<std::uint64_t> txnid) {
  auto metas = read_both_metas(file);
  if (auto* bad = std::get_if<CacheCheck>(&metas)) return std::move(*bad);
  const auto& [first, second] = std::get<std::pair<Meta, Meta>>(metas);
  const Meta* meta = &newest(first, second);
  if (txnid) {
    meta = first.txnid == *txnid ? &first : second.txnid == *txnid ? &second : nullptr;
    if (meta == nullptr) {
      return failed(CacheProblem::snapshot_moved,
                    fmt::format("{}: snapshot {} is no longer on a meta page", file.path().string(), *txnid), "");
    }
  }
  if (auto cut = check_page_boundary(file, *meta); !cut.ok()) return cut;
  Walker walker(file, *meta, scope);
  const auto bad = walker.run();
  CacheCheck c;
  if (bad && walker.needed_bytes()) c = truncated(file, *meta, *walker.needed_bytes());
  else if (bad) c = failed(CacheProblem::damaged, fmt::format("{} is damaged: {}", file.path().string(), *bad), salvage_fix(file.path()));
  c.txnid = meta->txnid;
  c.pages_checked = walker.pages_checked();
  return c;
}

CacheCheck open_and_check(const fs::path& file, CheckScope scope, std::optional<std::uint64_t> txnid) {
  auto opened = DataFile::open(file);
  if (const int* err = std::get_if<int>(&opened)) {
    if (*err == ENOENT) {
      return failed(CacheProblem::no_data_file, fmt::format("no kdispatch cache at {} (no {} there)",
                                                            file.parent_path().string(), file.filename().string()),
                    "pass --cache-dir DIR or set KD_CACHE_DIR");
    }
    return unreadable(CacheProblem::unreadable_data_file, file, *err);
  }
  return check_file(std::get<DataFile>(opened), scope, txnid);
}

}  // namespace

std::string_view to_string(CacheProblem p) { return name_in(kProblemNames, p); }

bool CacheCheck::damaged() const noexcept {
  return problem == CacheProblem::empty || problem == CacheProblem::not_lmdb ||
         problem == CacheProblem::truncated || problem == CacheProblem::damaged;
}

std::string CacheCheck::message() const { return fix.empty() ? what : what + ": " + fix; }

fs::path data_file_of(const fs::path& dir) { return dir / "data.mdb"; }

CacheCheck inspect_cache_dir(const fs::path& dir) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return failed(CacheProblem::no_directory,
                    fmt::format("no kdispatch cache at {} (the directory does not exist)", dir.string()),
                    "pass --cache-dir DIR or set KD_CACHE_DIR");
    }
    return unreadable(CacheProblem::unreadable_directory, dir, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return failed(CacheProblem::no_directory, fmt::format("{} is not a directory", dir.string()),
                  "pass the cache directory, not a file, as --cache-dir or KD_CACHE_DIR");
  }
  if (::access(dir.c_str(), R_OK | X_OK) != 0) return unreadable(CacheProblem::unreadable_directory, dir, errno);
  const fs::path file = data_file_of(dir);
  auto opened = DataFile::open(file);
  if (const int* err = std::get_if<int>(&opened)) {
    if (*err == ENOENT) {
      return failed(CacheProblem::no_data_file, fmt::format("no kdispatch cache at {} (no data.mdb there)", dir.string()),
                    "pass --cache-dir DIR or set KD_CACHE_DIR");
    }
    return unreadable(CacheProblem::unreadable_data_file, file, *err);
  }
  const DataFile& data = std::get<DataFile>(opened);
  auto metas = read_both_metas(data);
  if (auto* bad = std::get_if<CacheCheck>(&metas)) return std::move(*bad);
  const auto& [first, second] = std::get<std::pair<Meta, Meta>>(metas);
  // Without a walk, the pages it knows the snapshot reaches: its trees' roots.
  const Meta& meta = newest(first, second);
  std::uint64_t last_root = 1;
  for (const DbInfo* db : {&meta.main_db, &meta.free_db})
    if (db->root != kNoPage) last_root = std::max(last_root, db->root);
  CacheCheck c = check_page_boundary(data, meta);
  if (c.ok() && (last_root + 1) * meta.page_bytes > data.size_bytes())
    c = truncated(data, meta, (last_root + 1) * meta.page_bytes);
  c.txnid = meta.txnid;
  return c;
}

CacheCheck check_data_file(const fs::path& file, CheckScope scope, std::optional<std::uint64_t> txnid) {
  try {
    return open_and_check(file, scope, txnid);
  } catch (const std::bad_alloc&) {
    return failed(CacheProblem::damaged, fmt::format("{} is damaged: it claims more pages than memory holds", file.string()),
                  salvage_fix(file));
  }
}

CacheCheck check_open_snapshot(const lmdb::Env& env, lmdb::Txn& txn, CheckScope scope) {
  const fs::path file = data_file_of(env.path());
  CacheCheck c;
  for (int attempt = 0; attempt < kSnapshotAttempts; ++attempt) {
    c = check_data_file(file, scope, txn.id());
    if (c.problem != CacheProblem::snapshot_moved) return c;
    txn.reset();
    txn.renew();
  }
  return c;
}

CacheCheck check_cache_dir(const fs::path& dir, CheckScope scope) {
  CacheCheck inspected = inspect_cache_dir(dir);
  if (!inspected.ok()) return inspected;
  try {
    lmdb::Env env(dir, lmdb::Access::read_only);
    lmdb::Txn txn(env, lmdb::Access::read_only);
    return check_open_snapshot(env, txn, scope);
  } catch (const Error& e) {
    const bool file_fault = e.domain() == ErrorDomain::lmdb &&
                            (e.code() == MDB_INVALID || e.code() == MDB_CORRUPTED || e.code() == MDB_PAGE_NOTFOUND);
    if (!file_fault) throw;
    return failed(CacheProblem::damaged,
                  fmt::format("{} is damaged: LMDB cannot open it ({})", data_file_of(dir).string(), e.what()),
                  salvage_fix(data_file_of(dir)));
  }
}

}  // namespace kd
