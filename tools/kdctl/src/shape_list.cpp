#include "shape_list.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "key/gemm_key.hpp"
#include "key/n_buckets.hpp"
#include "key/row_key.hpp"

namespace kd::kdctl {
namespace {

constexpr std::array<std::string_view, 2> kCountNames{"calls=", "count="};
constexpr std::string_view kBlanks = " \t\r";

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kBlanks);
  return s.substr(first, last - first + 1);
}

// The count a comment body (text after '#') carries: nullopt when it names none, 0 when it names
// one that is not a positive decimal (an error for the caller).
std::optional<std::uint64_t> count_in_comment(std::string_view comment) {
  comment = trim(comment);
  for (const std::string_view name : kCountNames) {
    if (!comment.starts_with(name)) continue;
    const std::string_view digits = comment.substr(name.size());
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return 0;
    return value;
  }
  return std::nullopt;
}

// A key's class: its shape line with the n token's value left out, and its n range.
struct Classified {
  std::string cls;
  std::int64_t lo = 0, hi = 0;
};
Classified classify(const GemmKey& key) {
  std::string line = key.shape_line();
  const auto span = n_token_span(line);  // always present in a shape line
  line.replace(span->begin, span->end - span->begin, "*");
  return {std::move(line), key.n, key.n_last()};
}

std::string n_text(std::int64_t lo, std::int64_t hi) {
  return lo == hi ? fmt::format("n={}", lo) : fmt::format("n={}..{}", lo, hi);
}

}  // namespace

std::string ShapeTally::overlap(const std::string& cls, std::int64_t lo, std::int64_t hi) const {
  const auto it = placed_.find(cls);
  if (it == placed_.end()) return {};
  for (const Placed& p : it->second) {
    if (p.lo == lo && p.hi == hi) return {};  // the same shape again: counts merge
    if (p.hi < lo || hi < p.lo) continue;
    if (exact_in_range_ == ExactInRange::merge && (p.lo == p.hi || lo == hi)) continue;  // merged by bucketed()
    return fmt::format("{} overlaps {} of an otherwise equal key at {}:{}; one n must have one shape: drop one or "
                       "split the range around the other",
                       n_text(lo, hi), n_text(p.lo, p.hi), p.file, p.line);
  }
  return {};
}

void ShapeTally::add(std::istream& in, const std::string& name) {
  ++files_;
  std::optional<std::uint64_t> pending;  // from a `# calls=N` line, for the next key line
  std::size_t number = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    const std::string_view line = trim(text);
    const auto error = [&](std::string message) {
      errors_.push_back({name, number, std::move(message)});
    };
    if (line.empty()) continue;
    if (line.front() == '#') {
      pending = count_in_comment(line.substr(1));
      if (pending == 0u) {
        error(fmt::format("bad count comment '{}': expected calls=N or count=N, N >= 1", line));
        pending.reset();
      }
      continue;
    }
    std::string_view key_text = line;
    std::uint64_t calls = pending.value_or(1);
    pending.reset();
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      key_text = trim(line.substr(0, hash));
      const auto trailing = count_in_comment(line.substr(hash + 1));
      if (trailing == 0u) {
        error(fmt::format("bad count comment '{}': expected calls=N or count=N, N >= 1",
                          trim(line.substr(hash))));
        continue;
      }
      if (trailing) calls = *trailing;
    }
    auto parsed = parse_op_key(key_text);
    if (const auto* bad = std::get_if<KeyError>(&parsed)) {
      error(bad->message);
      continue;
    }
    // A row operator's line (issue 33) is exact: no n, no ranges to overlap, never bucketed.
    if (const auto* row = std::get_if<RowKey>(&std::get<OpKey>(parsed))) {
      counts_[row->shape_line()] += calls;
      continue;
    }
    const GemmKey& key = std::get<GemmKey>(std::get<OpKey>(parsed));
    Classified c = classify(key);
    if (std::string why = overlap(c.cls, c.lo, c.hi); !why.empty()) {
      error(std::move(why));
      continue;
    }
    auto& placed = placed_[c.cls];
    if (std::none_of(placed.begin(), placed.end(), [&](const Placed& p) { return p.lo == c.lo && p.hi == c.hi; }))
      placed.push_back({c.lo, c.hi, name, number});
    counts_[key.shape_line()] += calls;
  }
}

std::vector<ShapeCount> ShapeTally::bucketed(const NBuckets& buckets) const {
  std::map<std::string, std::uint64_t> merged;
  for (const auto& [line, calls] : counts_) {
    const auto parsed = parse_key(line);
    const auto* gemm = std::get_if<GemmKey>(&parsed);
    if (gemm == nullptr || gemm->is_range()) {  // a row operator's line stays exact
      merged[line] += calls;
      continue;
    }
    const GemmKey& key = *gemm;
    // Into a range the lists give that holds n; else its bucket, unless that would overlap one.
    const Classified c = classify(key);
    const auto given = placed_.find(c.cls);
    const auto ranges = given == placed_.end() ? std::vector<Placed>{} : given->second;
    const auto covering = std::find_if(ranges.begin(), ranges.end(),
                                       [&](const Placed& p) { return p.hi > p.lo && p.lo <= key.n && key.n <= p.hi; });
    if (covering != ranges.end()) {
      merged[key.with_n_range(covering->lo, covering->hi).shape_line()] += calls;
      continue;
    }
    const auto bucket = buckets.bucket_of(key.n);
    const bool clash = bucket && std::any_of(ranges.begin(), ranges.end(), [&](const Placed& p) {
      return p.hi > p.lo && p.lo <= bucket->second && bucket->first <= p.hi;
    });
    const GemmKey into = !bucket || clash ? key : key.with_n_range(bucket->first, bucket->second);
    // A bucket a key's other fields cannot hold (ldb >= n when tb=T) keeps the key exact.
    const std::string into_line = into.shape_line();
    merged[std::holds_alternative<GemmKey>(parse_key(into_line)) ? into_line : line] += calls;
  }
  std::vector<ShapeCount> shapes;
  for (const auto& [line, calls] : merged) shapes.push_back({line, calls});
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const ShapeCount& a, const ShapeCount& b) { return a.calls > b.calls; });
  return shapes;
}

std::vector<ShapeCount> ShapeTally::sorted() const {
  std::vector<ShapeCount> shapes;
  for (const auto& [line, calls] : counts_) shapes.push_back({line, calls});
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const ShapeCount& a, const ShapeCount& b) { return a.calls > b.calls; });
  return shapes;
}

std::string format_shape_list(const std::vector<ShapeCount>& shapes, const std::vector<std::string>& sources,
                              const std::string& buckets) {
  std::uint64_t total = 0;
  for (const auto& s : shapes) total += s.calls;
  std::string out = fmt::format(
      "# kdispatch shape list, merged by kdctl record from {} file(s): {} shape(s), {} call(s).\n"
      "# Each shape follows a calls=N comment: how many recorded runs missed it (summed counts).\n"
      "{}"
      "# Prewarm with: kdctl prewarm FILE\n",
      sources.size(), shapes.size(), total,
      buckets.empty() ? "" : fmt::format("# Token counts n merged into the buckets \"{}\" (n=LO..HI).\n", buckets));
  for (const auto& source : sources) out += fmt::format("# from: {}\n", source);
  for (const auto& s : shapes) out += fmt::format("# calls={}\n{}\n", s.calls, s.shape_line);
  return out;
}

}  // namespace kd::kdctl
