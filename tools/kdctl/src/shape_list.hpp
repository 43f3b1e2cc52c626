// Shape lists: the files KD_RECORD writes and kdctl prewarm reads.
//
// Input format (what kdctl record merges). One key per line: a canonical shape line, a full key
// line (its device part is dropped: a shape list is GPU-independent) or the `linear` shorthand.
// Blank lines and lines starting with `#` are skipped. A line counts once unless it carries a count:
//   - a trailing comment `# calls=N` or `# count=N` after the key, or
//   - a comment line that is exactly `# calls=N` or `# count=N` directly before the key line
//     (the form `kdctl record` writes, so merged lists merge again with their counts).
// The shim appends each distinct missed line once per process (miss_recorder.hpp), so for plain
// KD_RECORD files the merged count of a shape is the number of recorded processes that missed it.
//
// Row operators (issue 33): a row-operator line (`layernorm dtype=f32 rows=4096 cols=1024 weight=1
// bias=1`, key/row_key.hpp) is read as a GEMM line is, and is always exact: no n, never bucketed.
//
// Ranges (issue 29): a key may stand for a range of token counts, `n=33..64` (or the shorthand's
// `tokens=33..64`). Within what one tally has read, a range may not share an n with another range
// of an otherwise equal key (the same range twice is one shape), nor, in a list to prewarm, with an
// exact key: such a line is an error naming both places, FILE:LINE, because which record serves the
// shared n would be a guess. When merging (kdctl record) an exact key inside a range is merged into
// it instead: recorded n join the buckets of a list merged before. Inverted and open-ended ranges
// are the parser's errors.
//
// Output format (format_shape_list): a comment header, then per shape a `# calls=N` comment line
// followed by the canonical shape line, in decreasing count (ties: line order). Every non-comment
// line parses with parse_op_key, so the output is a valid prewarm list.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "key/n_buckets.hpp"

namespace kd::kdctl {

struct ShapeCount {
  std::string shape_line;  // canonical (GemmKey::shape_line or RowKey::shape_line)
  std::uint64_t calls = 0;
};

// A line that did not parse: where, and parse_op_key's message (or what is wrong with the count).
struct ShapeListError {
  std::string file;
  std::size_t line = 0;  // 1-based
  std::string message;
};

// What a tally does with an exact key whose n a range of an otherwise equal key holds.
enum class ExactInRange : std::uint8_t {
  refuse,  // an error (a list to prewarm or bench)
  merge,   // counted for the range (kdctl record)
};

class ShapeTally {
public:
  explicit ShapeTally(ExactInRange exact_in_range = ExactInRange::refuse) : exact_in_range_(exact_in_range) {}
  // Reads one list; `name` labels its errors. Bad lines are recorded in errors() and skipped.
  void add(std::istream& in, const std::string& name);
  // Shapes in decreasing count, ties in canonical-line order.
  std::vector<ShapeCount> sorted() const;
  // The same with every exact shape merged (kdctl record) into a range the lists give that holds
  // its n, else into its bucket of `buckets` (the daemon's `buckets` setting) unless that bucket
  // would share an n with a range the lists give; counts summed. Shapes without a bucket (n alone
  // in it, above the last edge, or a key whose ldb ties it to its n) stay exact.
  std::vector<ShapeCount> bucketed(const NBuckets& buckets) const;
  const std::vector<ShapeListError>& errors() const noexcept { return errors_; }
  std::size_t files() const noexcept { return files_; }

private:
  // Where a key of one class (its line with n left out) was first read, for overlap errors.
  struct Placed {
    std::int64_t lo = 0, hi = 0;
    std::string file;
    std::size_t line = 0;
  };
  // The error for a key of `cls` with n in [lo, hi] that shares an n with one read before, or "".
  std::string overlap(const std::string& cls, std::int64_t lo, std::int64_t hi) const;

  ExactInRange exact_in_range_;
  std::map<std::string, std::uint64_t> counts_;
  std::map<std::string, std::vector<Placed>> placed_;  // by class
  std::vector<ShapeListError> errors_;
  std::size_t files_ = 0;
};

// The merged list as text (see the header comment). `sources` names the inputs in the header;
// `buckets`, when not empty, the bucket spec the shapes were merged into.
std::string format_shape_list(const std::vector<ShapeCount>& shapes, const std::vector<std::string>& sources,
                              const std::string& buckets = {});

}  // namespace kd::kdctl
