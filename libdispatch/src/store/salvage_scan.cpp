#include "store/salvage_scan.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <variant>

#include <fmt/format.h>

#include "common/error.hpp"
#include "store/lmdb_file.hpp"

namespace kd {
namespace {

namespace fs = std::filesystem;
using namespace lmdb_file;

constexpr std::size_t kMaxNotes = 8;
// Pages sampled when no meta page names the page size.
constexpr std::uint64_t kGuessSamplePages = 4096;
constexpr std::uint32_t kDefaultPageBytes = 4096;

enum class PageUse : std::uint8_t { unseen, tree, overflow, free_listed, scanned };

class Scanner {
public:
  Scanner(const DataFile& file, const std::function<void(const SalvagedEntry&)>& visit)
      : file_(file), visit_(visit) {}

  SalvageSummary run() {
    summary_.file_bytes = file_.size_bytes();
    if (file_.size_bytes() == 0) return summary_;
    const auto metas = file_.read_metas();
    std::vector<Meta> usable;
    for (const auto* m : {std::get_if<Meta>(&metas.first), std::get_if<Meta>(&metas.second)}) {
      if (m != nullptr) usable.push_back(*m);
    }
    summary_.usable_metas = static_cast<int>(usable.size());
    if (usable.size() == 2 && usable[0].page_bytes != usable[1].page_bytes) usable.pop_back();
    page_bytes_ = usable.empty() ? guess_page_bytes() : usable.front().page_bytes;
    summary_.page_bytes = page_bytes_;
    summary_.page_size_guessed = usable.empty();
    summary_.pages = file_.size_bytes() / page_bytes_;
    use_.assign(summary_.pages, PageUse::unseen);
    for (std::uint64_t p = 0; p < std::min<std::uint64_t>(kFirstDataPage, summary_.pages); ++p) use_[p] = PageUse::tree;

    if (usable.size() == 2 && &newest(usable[0], usable[1]) != &usable[0]) std::swap(usable[0], usable[1]);
    for (std::size_t i = 0; i < usable.size(); ++i) {
      walk_snapshot(usable[i], i == 0 ? SalvagedEntry::Found::newest_tree : SalvagedEntry::Found::older_tree);
    }
    // After both walks: the older snapshot's pages are on the newest free-page list.
    if (!usable.empty()) mark_free_pages(usable.front());
    scan_orphans();
    return summary_;
  }

private:
  void note(std::string text) {
    if (summary_.notes.size() < kMaxNotes) summary_.notes.push_back(std::move(text));
  }

  bool in_file(std::uint64_t pgno) const noexcept { return pgno >= kFirstDataPage && pgno < summary_.pages; }

  // The page size whose page numbers agree with the most page headers.
  std::uint32_t guess_page_bytes() const {
    std::uint32_t best = kDefaultPageBytes;
    std::uint64_t best_hits = 0;
    for (std::uint32_t bytes = kMinPageBytes; bytes <= kMaxPageBytes; bytes *= 2) {
      std::uint64_t hits = 0;
      const std::uint64_t pages = std::min(file_.size_bytes() / bytes, kGuessSamplePages);
      for (std::uint64_t p = kFirstDataPage; p < pages; ++p) {
        std::uint64_t stored = 0;
        std::array<std::byte, sizeof(stored)> raw{};
        if (!file_.read(p * bytes, raw)) break;
        std::memcpy(&stored, raw.data(), sizeof(stored));
        hits += stored == p ? 1 : 0;
      }
      if (hits > best_hits) {
        best_hits = hits;
        best = bytes;
      }
    }
    return best;
  }

  // Reads a big-data value and claims its run; nullopt when the run is not there.
  std::optional<std::string> read_big_value(const Page::Node& n) {
    const std::uint64_t pages = overflow_pages(n.data_bytes, page_bytes_);
    if (!in_file(n.pgno) || pages > summary_.pages - n.pgno) return std::nullopt;
    auto header = read_overflow_header(file_, page_bytes_, n.pgno);
    if (!std::holds_alternative<std::uint32_t>(header) || std::get<std::uint32_t>(header) != pages) return std::nullopt;
    auto data = read_overflow_data(file_, page_bytes_, n.pgno, n.data_bytes);
    if (data) {
      for (std::uint64_t p = n.pgno; p < n.pgno + pages; ++p) {
        if (use_[p] == PageUse::unseen) use_[p] = PageUse::overflow;
      }
    }
    return data;
  }

  void emit_leaf(const Page& page, std::string_view db, SalvagedEntry::Found found) {
    for (std::size_t i = 0; i < page.size(); ++i) {
      const Page::Node n = page.node(i);
      if ((n.flags & (kSubData | kDupData)) != 0) continue;
      SalvagedEntry e;
      e.found = found;
      e.db = db;
      e.key = n.key;
      e.page = page.pgno();
      std::optional<std::string> big;
      if ((n.flags & kBigData) != 0) {
        big = read_big_value(n);
        if (big) e.value = *big;
      } else {
        e.value = std::string_view(reinterpret_cast<const char*>(n.data.data()), n.data.size());
      }
      visit_(e);
    }
  }

  // Walks one tree; `on_leaf` gets each leaf page. Pages reached before (by this or an earlier
  // walk) are skipped: they were read already, and a cycle cannot recurse.
  template <class OnLeaf>
  void walk_tree(std::uint64_t pgno, std::string_view name, int level, OnLeaf&& on_leaf) {
    if (!in_file(pgno)) {
      note(fmt::format("the {} tree points to page {}, outside the file", name, pgno));
      return;
    }
    if (use_[pgno] != PageUse::unseen || level > kMaxDepth) return;
    use_[pgno] = PageUse::tree;
    ++summary_.tree_pages;
    auto read = Page::read(file_, page_bytes_, pgno);
    if (const auto* why = std::get_if<std::string>(&read)) {
      ++summary_.unreadable_pages;
      note(fmt::format("page {} of the {} tree: {}", pgno, name, *why));
      return;
    }
    const Page& page = std::get<Page>(read);
    if (!page.is_branch()) {
      on_leaf(page);
      return;
    }
    for (std::size_t i = 0; i < page.size(); ++i) walk_tree(page.node(i).pgno, name, level + 1, on_leaf);
  }

  void walk_snapshot(const Meta& meta, SalvagedEntry::Found found) {
    if (meta.main_db.root == kNoPage) return;
    std::vector<std::pair<std::string, std::uint64_t>> roots;
    walk_tree(meta.main_db.root, "main", 1, [&](const Page& page) {
      for (std::size_t i = 0; i < page.size(); ++i) {
        const Page::Node n = page.node(i);
        if ((n.flags & kSubData) == 0 || (n.flags & kBigData) != 0 || n.data.size() != kDbBytes) continue;
        const DbInfo db = parse_db_info(n.data.first<kDbBytes>());
        if (db.root != kNoPage) roots.emplace_back(std::string(n.key), db.root);
      }
    });
    for (const auto& [name, root] : roots) {
      walk_tree(root, name, 1, [&](const Page& page) { emit_leaf(page, name, found); });
    }
  }

  // The pages the newest free-page list names: old snapshots' pages, never to be taken for orphans.
  void mark_free_pages(const Meta& meta) {
    if (meta.free_db.root == kNoPage) return;
    walk_tree(meta.free_db.root, "free-page", 1, [&](const Page& page) {
      for (std::size_t i = 0; i < page.size(); ++i) {
        const Page::Node n = page.node(i);
        std::optional<std::string> big;
        std::string_view ids(reinterpret_cast<const char*>(n.data.data()), n.data.size());
        if ((n.flags & kBigData) != 0) {
          big = read_big_value(n);
          if (!big) continue;
          ids = *big;
        }
        if (ids.size() < sizeof(std::uint64_t)) continue;
        std::uint64_t count = 0;
        std::memcpy(&count, ids.data(), sizeof(count));
        count = std::min<std::uint64_t>(count, ids.size() / sizeof(std::uint64_t) - 1);
        for (std::uint64_t k = 1; k <= count; ++k) {
          std::uint64_t pgno = 0;
          std::memcpy(&pgno, ids.data() + k * sizeof(pgno), sizeof(pgno));
          if (in_file(pgno) && use_[pgno] == PageUse::unseen) use_[pgno] = PageUse::free_listed;
        }
      }
    });
  }

  void scan_orphans() {
    for (std::uint64_t p = kFirstDataPage; p < summary_.pages; ++p) {
      if (use_[p] != PageUse::unseen) continue;
      // An intact overflow run is skipped whole: its contents must never be taken for pages.
      auto header = read_overflow_header(file_, page_bytes_, p);
      if (const auto* count = std::get_if<std::uint32_t>(&header); count != nullptr && *count >= 1) {
        p += std::min<std::uint64_t>(*count, summary_.pages - p) - 1;
        continue;
      }
      use_[p] = PageUse::scanned;
      auto read = Page::read(file_, page_bytes_, p);
      if (const auto* page = std::get_if<Page>(&read); page != nullptr && !page->is_branch()) {
        ++summary_.orphan_leaves;
        emit_leaf(*page, "", SalvagedEntry::Found::orphan_page);
      }
    }
  }

  const DataFile& file_;
  const std::function<void(const SalvagedEntry&)>& visit_;
  SalvageSummary summary_;
  std::uint32_t page_bytes_ = kDefaultPageBytes;
  std::vector<PageUse> use_;
};

}  // namespace

SalvageSummary scan_for_salvage(const fs::path& file, const std::function<void(const SalvagedEntry&)>& visit) {
  auto opened = DataFile::open(file);
  if (const int* err = std::get_if<int>(&opened)) {
    throw Error(ErrorDomain::system, *err, fmt::format("cannot read {}: {}", file.string(), std::strerror(*err)));
  }
  Scanner scanner(std::get<DataFile>(opened), visit);
  return scanner.run();
}

}  // namespace kd
