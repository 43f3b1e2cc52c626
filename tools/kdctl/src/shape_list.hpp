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
// Output format (format_shape_list): a comment header, then per shape a `# calls=N` comment line
// followed by the canonical shape line, in decreasing count (ties: line order). Every non-comment
// line parses with parse_key, so the output is a valid prewarm list.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kd::kdctl {

struct ShapeCount {
  std::string shape_line;  // canonical (GemmKey::shape_line)
  std::uint64_t calls = 0;
};

// A line that did not parse: where, and parse_key's message (or what is wrong with the count).
struct ShapeListError {
  std::string file;
  std::size_t line = 0;  // 1-based
  std::string message;
};

class ShapeTally {
public:
  // Reads one list; `name` labels its errors. Bad lines are recorded in errors() and skipped.
  void add(std::istream& in, const std::string& name);
  // Shapes in decreasing count, ties in canonical-line order.
  std::vector<ShapeCount> sorted() const;
  const std::vector<ShapeListError>& errors() const noexcept { return errors_; }
  std::size_t files() const noexcept { return files_; }

private:
  std::map<std::string, std::uint64_t> counts_;
  std::vector<ShapeListError> errors_;
  std::size_t files_ = 0;
};

// The merged list as text (see the header comment). `sources` names the inputs in the header.
std::string format_shape_list(const std::vector<ShapeCount>& shapes,
                              const std::vector<std::string>& sources);

}  // namespace kd::kdctl
