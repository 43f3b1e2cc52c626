#include "shape_list.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "key/gemm_key.hpp"

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

}  // namespace

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
    auto parsed = parse_key(key_text);
    if (const auto* bad = std::get_if<KeyError>(&parsed)) {
      error(bad->message);
      continue;
    }
    counts_[std::get<GemmKey>(parsed).shape_line()] += calls;
  }
}

std::vector<ShapeCount> ShapeTally::sorted() const {
  std::vector<ShapeCount> shapes;
  for (const auto& [line, calls] : counts_) shapes.push_back({line, calls});
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const ShapeCount& a, const ShapeCount& b) { return a.calls > b.calls; });
  return shapes;
}

std::string format_shape_list(const std::vector<ShapeCount>& shapes,
                              const std::vector<std::string>& sources) {
  std::uint64_t total = 0;
  for (const auto& s : shapes) total += s.calls;
  std::string out = fmt::format(
      "# kdispatch shape list, merged by kdctl record from {} file(s): {} shape(s), {} call(s).\n"
      "# Each shape follows a calls=N comment: how many recorded runs missed it (summed counts).\n"
      "# Prewarm with: kdctl prewarm FILE\n",
      sources.size(), shapes.size(), total);
  for (const auto& source : sources) out += fmt::format("# from: {}\n", source);
  for (const auto& s : shapes) out += fmt::format("# calls={}\n{}\n", s.calls, s.shape_line);
  return out;
}

}  // namespace kd::kdctl
