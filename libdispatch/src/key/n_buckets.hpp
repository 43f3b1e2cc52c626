// Buckets of token counts (issue 29): how a miss for an untuned n becomes a search for a range of
// n instead of the single value, and how `kdctl record` merges recorded n. A table is a sorted list
// of edges; the bucket of n is (the edge below it, the first edge >= n], so edges 1,2,4,...,64 make
// n=40 the bucket 33..64 and n=2 the bucket 2..2 (exact). An n above the last edge has no bucket
// (searched alone).
//
// Specs (the daemon's `buckets` setting, kdctl record --buckets):
//   default   powers of two up to 64, then doubling steps to 16384: "1..64*2,128..16384*2"
//   vllm      vLLM's CUDA-graph capture sizes, 1, 2, 4, then 8 to 512 in steps of 8
//             ("1,2,4,8..512+8", 67 sizes), so each bucket holds one captured batch size
//   off       no buckets: every n is searched alone (before issue 29)
//   a list    comma-separated items, each an edge `E`, a step run `A..B+S` (A, A+S, ... <= B) or
//             a doubling run `A..B*F` (A, A*F, ... <= B); edges in increasing order overall
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kd {

class NBuckets {
public:
  // The table of `spec` (above), or a message naming the bad item. At most kMaxEdges edges.
  static constexpr std::size_t kMaxEdges = 4096;
  static std::variant<NBuckets, std::string> parse(std::string_view spec);
  // The built-in default ("default").
  static const NBuckets& standard();

  // [lo, hi] of the bucket holding n (lo == hi for an exact bucket), or nullopt when n is above
  // the last edge or there are no buckets ("off").
  std::optional<std::pair<std::int64_t, std::int64_t>> bucket_of(std::int64_t n) const;
  const std::vector<std::int64_t>& edges() const noexcept { return edges_; }
  // The spec as given (for logs and status).
  const std::string& spec() const noexcept { return spec_; }
  bool operator==(const NBuckets&) const = default;

private:
  std::vector<std::int64_t> edges_;
  std::string spec_ = "off";
};

}  // namespace kd
