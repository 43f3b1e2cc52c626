#include "key/n_buckets.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

namespace kd {
namespace {

struct NamedSpec {
  std::string_view name;
  std::string_view spec;
};
constexpr std::array<NamedSpec, 3> kNamed{{
    {"default", "1..64*2,128..16384*2"},
    {"vllm", "1,2,4,8..512+8"},
    {"off", ""},
}};

constexpr std::int64_t kMaxEdge = std::int64_t{1} << 40;

std::optional<std::int64_t> number(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < 1 || v > kMaxEdge) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Appends the edges of one item; a message when it is malformed.
std::optional<std::string> expand(std::string_view item, std::vector<std::int64_t>& edges) {
  const std::size_t dots = item.find("..");
  if (dots == std::string_view::npos) {
    const auto e = number(item);
    if (!e) return fmt::format("'{}': expected an edge (an integer from 1 to 2^40) or a run A..B+S / A..B*F", item);
    edges.push_back(*e);
    return std::nullopt;
  }
  const std::string_view from_text = item.substr(0, dots), rest = item.substr(dots + 2);
  const std::size_t op = rest.find_first_of("+*");
  if (op == std::string_view::npos) return fmt::format("'{}': a run needs a step: A..B+S or A..B*F", item);
  const auto from = number(from_text), to = number(rest.substr(0, op)), step = number(rest.substr(op + 1));
  if (!from || !to || !step) return fmt::format("'{}': A, B and the step must be integers from 1 to 2^40", item);
  if (*from > *to) return fmt::format("'{}': the run is inverted ({} > {})", item, *from, *to);
  const bool doubling = rest[op] == '*';
  if (doubling && *step < 2) return fmt::format("'{}': a factor must be at least 2", item);
  for (std::int64_t e = *from; e <= *to; e = doubling ? e * *step : e + *step) {
    edges.push_back(e);
    if (edges.size() > NBuckets::kMaxEdges) return fmt::format("more than {} edges", NBuckets::kMaxEdges);
  }
  return std::nullopt;
}

}  // namespace

std::variant<NBuckets, std::string> NBuckets::parse(std::string_view spec_in) {
  const std::string_view given = trim(spec_in);
  std::string_view spec = given;
  for (const NamedSpec& n : kNamed)
    if (given == n.name) spec = n.spec;
  NBuckets out;
  out.spec_ = std::string(given);
  std::string_view rest = spec;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) return std::string("an empty item (two commas in a row, or a trailing comma)");
    const std::size_t before = out.edges_.size();
    if (auto problem = expand(item, out.edges_)) return "buckets: " + *problem;
    if (before > 0 && out.edges_[before] <= out.edges_[before - 1])
      return fmt::format("buckets: '{}' starts at {}, not above the edge before it ({}): list edges in increasing order",
                         item, out.edges_[before], out.edges_[before - 1]);
  }
  return out;
}

const NBuckets& NBuckets::standard() {
  static const NBuckets table = std::get<NBuckets>(parse("default"));
  return table;
}

std::optional<std::pair<std::int64_t, std::int64_t>> NBuckets::bucket_of(std::int64_t n) const {
  const auto it = std::lower_bound(edges_.begin(), edges_.end(), n);
  if (n < 1 || it == edges_.end()) return std::nullopt;
  const std::int64_t lo = it == edges_.begin() ? 1 : *(it - 1) + 1;
  return std::pair{lo, *it};
}

}  // namespace kd
