// Column-aligned text tables for kdctl's listings, and the small formatters they share.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kd::kdctl {

enum class Align { left, right };

struct Column {
  std::string title;
  Align align = Align::left;
};

// Rows are padded to the widest cell of each column, columns separated by two blanks, the last
// column never padded on the right. A row with fewer cells than columns is padded with empty ones;
// extra cells are an error (std::invalid_argument) at add().
class Table {
public:
  explicit Table(std::vector<Column> columns);
  void add(std::vector<std::string> cells);
  std::size_t size() const noexcept { return rows_.size(); }
  // The header line, then one line per row, each ending in '\n'.
  std::string render() const;

private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "3d", "5h", "12m", "40s" (the largest whole unit); "-" for a negative age (a clock skew).
std::string format_age(std::chrono::seconds age);
// "512B", "1.5KiB", "20.0MiB", "3.2GiB".
std::string format_bytes(std::uint64_t bytes);
// "x1.23" = baseline / candidate; "-" when either time is not positive.
std::string format_speedup(double baseline_us, double candidate_us);
// The time since `created_unix_s`, from the system clock.
std::chrono::seconds age_of(std::int64_t created_unix_s);

}  // namespace kd::kdctl
