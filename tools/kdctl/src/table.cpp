#include "table.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace kd::kdctl {

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add(std::vector<std::string> cells) {
  if (cells.size() > columns_.size()) {
    throw std::invalid_argument(fmt::format("table row has {} cells for {} columns", cells.size(),
                                            columns_.size()));
  }
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> widths(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].title.size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::size_t pad = widths[c] - cells[c].size();
      if (columns_[c].align == Align::right) text.append(pad, ' ');
      text += cells[c];
      if (!last && columns_[c].align == Align::left) text.append(pad, ' ');
      if (!last) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text;
    out += '\n';
  };
  std::vector<std::string> titles;
  for (const auto& c : columns_) titles.push_back(c.title);
  line(titles);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string format_age(std::chrono::seconds age) {
  if (age.count() < 0) return "-";
  struct Unit {
    std::int64_t seconds;
    const char* suffix;
  };
  constexpr std::array<Unit, 3> kUnits{{{86400, "d"}, {3600, "h"}, {60, "m"}}};
  for (const Unit& u : kUnits) {
    if (age.count() >= u.seconds) return fmt::format("{}{}", age.count() / u.seconds, u.suffix);
  }
  return fmt::format("{}s", age.count());
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<const char*, 3> kUnits{"KiB", "MiB", "GiB"};
  if (bytes < 1024) return fmt::format("{}B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f}{}", value, kUnits[unit]);
}

std::string format_speedup(double baseline_us, double candidate_us) {
  if (baseline_us <= 0 || candidate_us <= 0) return "-";
  return fmt::format("x{:.2f}", baseline_us / candidate_us);
}

std::chrono::seconds age_of(std::int64_t created_unix_s) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return now - std::chrono::seconds(created_unix_s);
}

}  // namespace kd::kdctl
