#include "plan/launch_plan.hpp"

#include <cstddef>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kd {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kMarker = "kdispatch:plan";
constexpr std::size_t kMaxLaunches = 8;
constexpr std::uint64_t kMaxBlockThreads = 1024;
constexpr std::uint64_t kMaxSmemBytes = 227 * 1024;  // sm_90's opt-in maximum per block
constexpr std::uint64_t kMaxWorkspaceBytes = std::uint64_t{4} << 30;
// CUDA's grid limits: x up to 2^31-1, y and z up to 65535; block x, y up to 1024, z up to 64.
constexpr std::array<std::uint64_t, 3> kMaxGrid{(std::uint64_t{1} << 31) - 1, 65535, 65535};
constexpr std::array<std::uint64_t, 3> kMaxBlock{1024, 1024, 64};

// Parsing throws this internally; the public functions turn it into a PlanError value.
struct PlanFailure {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw PlanFailure{"plan: " + std::move(message)}; }

// A non-negative JSON integer (not a float, not a bool), or nullopt.
std::optional<std::uint64_t> as_unsigned(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  return std::nullopt;
}

std::uint64_t bounded_integer(const json& v, const std::string& where, std::uint64_t max) {
  const auto value = as_unsigned(v);
  if (!value) fail(fmt::format("{}: expected an integer >= 0, got {}", where, v.dump()));
  if (*value > max) fail(fmt::format("{}: {} exceeds the maximum {}", where, *value, max));
  return *value;
}

std::array<std::uint32_t, 3> dims(const json& launch, const char* field, std::size_t index,
                                  const std::array<std::uint64_t, 3>& max) {
  const std::string where = fmt::format("launches[{}].{}", index, field);
  if (!launch.contains(field)) fail(where + ": missing");
  const json& v = launch.at(field);
  const auto expected = [&] {
    fail(fmt::format("{}: expected 3 integers >= 1, got {}", where, v.dump()));
  };
  if (!v.is_array() || v.size() != 3) expected();
  std::array<std::uint32_t, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto d = as_unsigned(v[i]);
    if (!d || *d == 0) expected();
    if (*d > max[i]) fail(fmt::format("{}[{}]: {} exceeds the maximum {}", where, i, *d, max[i]));
    out[i] = static_cast<std::uint32_t>(*d);
  }
  return out;
}

bool is_identifier(std::string_view s) {
  const auto alpha = [](char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.empty() || !alpha(s.front())) return false;
  for (const char c : s) {
    if (!alpha(c) && !digit(c)) return false;
  }
  return true;
}

// Rejects fields outside `known`: a misspelt "smem_bytes" must not silently become 0.
void reject_unknown_fields(const json& obj, std::initializer_list<std::string_view> known,
                           const std::string& where) {
  for (const auto& [name, value] : obj.items()) {
    bool found = false;
    for (const auto k : known) found = found || name == k;
    if (!found) fail(fmt::format("{}unknown field \"{}\"", where, name));
  }
}

// "grid_rule": three entries, each null or a GridRule object; at least one a rule.
std::array<std::optional<GridRule>, 3> grid_rules(const json& v, const std::string& where) {
  if (!v.is_array() || v.size() != 3) fail(fmt::format("{}: expected 3 entries (null or a rule), got {}", where, v.dump()));
  std::array<std::optional<GridRule>, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (v[i].is_null()) continue;
    auto rule = grid_rule_from_json(v[i]);
    if (const auto* why = std::get_if<std::string>(&rule)) fail(fmt::format("{}[{}]: {}", where, i, *why));
    out[i] = std::get<GridRule>(rule);
  }
  if (!out[0] && !out[1] && !out[2]) fail(where + ": no rule (leave the field out)");
  return out;
}

LaunchSpec parse_launch(const json& launch, std::size_t index) {
  const std::string where = fmt::format("launches[{}]", index);
  if (!launch.is_object()) fail(fmt::format("{}: expected an object, got {}", where, launch.dump()));
  reject_unknown_fields(launch, {"entry", "grid", "grid_rule", "block", "smem", "pdl"}, where + ": ");
  LaunchSpec spec;
  if (!launch.contains("entry")) fail(where + ".entry: missing");
  const json& entry = launch.at("entry");
  if (!entry.is_string() || !is_identifier(entry.get<std::string>())) {
    fail(fmt::format("{}.entry: expected a C identifier string, got {}", where, entry.dump()));
  }
  spec.entry = entry.get<std::string>();
  spec.grid = dims(launch, "grid", index, kMaxGrid);
  spec.block = dims(launch, "block", index, kMaxBlock);
  const std::uint64_t threads = std::uint64_t{spec.block[0]} * spec.block[1] * spec.block[2];
  if (threads > kMaxBlockThreads) {
    fail(fmt::format("{}.block: {} threads per block exceeds the maximum {}", where, threads,
                     kMaxBlockThreads));
  }
  if (launch.contains("smem")) {
    spec.smem_bytes =
        static_cast<std::uint32_t>(bounded_integer(launch.at("smem"), where + ".smem", kMaxSmemBytes));
  }
  if (launch.contains("pdl")) {
    const json& pdl = launch.at("pdl");
    if (!pdl.is_boolean()) fail(fmt::format("{}.pdl: expected true or false, got {}", where, pdl.dump()));
    // On the first launch it depends on whatever the caller ran last on its stream: allowed, and
    // held to a stricter wait by the contract checks (search/src/contract/compiled_checks.cpp).
    spec.pdl = pdl.get<bool>();
  }
  if (launch.contains("grid_rule")) spec.grid_rule = grid_rules(launch.at("grid_rule"), where + ".grid_rule");
  return spec;
}

LaunchPlan parse_plan_value(const json& root) {
  if (!root.is_object()) fail(fmt::format("expected a JSON object, got {}", root.dump()));
  reject_unknown_fields(root, {"launches", "workspace"}, "");
  if (!root.contains("launches")) fail("launches: missing");
  const json& launches = root.at("launches");
  if (!launches.is_array() || launches.empty() || launches.size() > kMaxLaunches) {
    fail(fmt::format("launches: expected an array of 1 to {} launches, got {}", kMaxLaunches,
                     launches.is_array() ? fmt::format("{} entries", launches.size())
                                         : launches.dump()));
  }
  LaunchPlan plan;
  for (std::size_t i = 0; i < launches.size(); ++i) plan.launches.push_back(parse_launch(launches[i], i));
  if (root.contains("workspace")) {
    plan.workspace_bytes = bounded_integer(root.at("workspace"), "workspace", kMaxWorkspaceBytes);
  }
  return plan;
}

std::size_t line_of(std::string_view source, std::size_t offset) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) line += source[i] == '\n' ? 1 : 0;
  return line;
}

enum class CommentForm { line, block };

struct Marker {
  std::size_t offset;  // of the first character after the marker
  CommentForm form;
};

// A marker counts only when it opens a comment: `//` or `/*`, then blanks, then the marker.
// Mentions elsewhere ("see the kdispatch:plan below") are prose, not plans.
std::optional<CommentForm> comment_opening(std::string_view source, std::size_t marker_pos) {
  std::size_t i = marker_pos;
  while (i > 0 && (source[i - 1] == ' ' || source[i - 1] == '\t')) --i;
  if (i < 2 || (source[i - 2] != '/')) return std::nullopt;
  if (source[i - 1] == '/') return CommentForm::line;
  if (source[i - 1] == '*') return CommentForm::block;
  return std::nullopt;
}

std::vector<Marker> find_markers(std::string_view source) {
  std::vector<Marker> found;
  for (std::size_t pos = source.find(kMarker); pos != std::string_view::npos;
       pos = source.find(kMarker, pos + kMarker.size())) {
    if (const auto form = comment_opening(source, pos)) {
      found.push_back({pos + kMarker.size(), *form});
    }
  }
  return found;
}

std::variant<LaunchPlan, PlanError> guarded(auto&& parse) {
  try {
    return parse();
  } catch (const PlanFailure& f) {
    return PlanError{f.message};
  }
}

}  // namespace

std::variant<LaunchPlan, PlanError> parse_plan_json(std::string_view text) {
  return guarded([&] {
    json root;
    try {
      root = json::parse(text);
    } catch (const json::exception& e) {
      fail(fmt::format("invalid JSON: {}", e.what()));
    }
    return parse_plan_value(root);
  });
}

std::variant<LaunchPlan, PlanError> parse_plan_from_source(std::string_view source) {
  const std::vector<Marker> markers = find_markers(source);
  if (markers.empty()) {
    return PlanError{"plan: no `// kdispatch:plan {...}` comment in the source"};
  }
  if (markers.size() > 1) {
    return PlanError{fmt::format("plan: {} `kdispatch:plan` comments (lines {} and {}); expected one",
                                 markers.size(), line_of(source, markers[0].offset),
                                 line_of(source, markers[1].offset))};
  }
  const Marker& m = markers.front();
  std::size_t end = std::string_view::npos;
  if (m.form == CommentForm::line) {
    end = source.find('\n', m.offset);
    if (end == std::string_view::npos) end = source.size();
  } else {
    end = source.find("*/", m.offset);
    if (end == std::string_view::npos) {
      return PlanError{fmt::format("plan: the /* comment opened on line {} is not closed",
                                   line_of(source, m.offset))};
    }
  }
  auto parsed = parse_plan_json(source.substr(m.offset, end - m.offset));
  if (auto* error = std::get_if<PlanError>(&parsed)) {
    // "plan: X" becomes "plan: line N: X".
    error->message = fmt::format("plan: line {}: {}", line_of(source, m.offset),
                                 std::string_view(error->message).substr(std::string_view("plan: ").size()));
  }
  return parsed;
}

std::string plan_to_json(const LaunchPlan& plan) {
  ordered_json launches = ordered_json::array();
  for (const LaunchSpec& l : plan.launches) {
    ordered_json entry;
    entry["entry"] = l.entry;
    entry["grid"] = l.grid;
    if (l.has_rule()) {  // range plans only: exact plans keep their exact text
      ordered_json rules = ordered_json::array();
      for (const auto& r : l.grid_rule) rules.push_back(r ? ordered_json::parse(grid_rule_json(*r).dump()) : ordered_json());
      entry["grid_rule"] = std::move(rules);
    }
    entry["block"] = l.block;
    entry["smem"] = l.smem_bytes;
    if (l.pdl) entry["pdl"] = true;  // absent when false: older plans keep their exact text
    launches.push_back(std::move(entry));
  }
  ordered_json root;
  root["launches"] = std::move(launches);
  root["workspace"] = plan.workspace_bytes;
  return root.dump();
}

bool LaunchPlan::has_rules() const noexcept {
  for (const LaunchSpec& l : launches)
    if (l.has_rule()) return true;
  return false;
}

std::optional<std::string> range_plan_problem(const LaunchPlan& plan, std::int64_t lo, std::int64_t hi) {
  if (lo < 1 || hi < lo) return fmt::format("plan: range {}..{} is empty", lo, hi);
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    const LaunchSpec& l = plan.launches[i];
    for (std::size_t d = 0; d < 3; ++d) {
      if (!l.grid_rule[d]) continue;
      const GridRule& r = *l.grid_rule[d];
      const std::string where = fmt::format("plan: launches[{}].grid_rule[{}]", i, d);
      if (r.div == 0 || r.scale == 0) return where + ": div and scale must be >= 1";
      const auto first = r.at(lo), last = r.at(hi);
      if (!first || !last) return fmt::format("{}: overflows over n={}..{}", where, lo, hi);
      if (*first < 1) return fmt::format("{}: {} at n={} (at least 1)", where, *first, lo);
      if (static_cast<std::uint64_t>(*last) > kMaxGrid[d])
        return fmt::format("{}: {} at n={} exceeds the maximum {}", where, *last, hi, kMaxGrid[d]);
      if (static_cast<std::uint64_t>(*last) != l.grid[d])
        return fmt::format("{}: {} at n={}, but grid[{}] is {}", where, *last, hi, d, l.grid[d]);
    }
  }
  return std::nullopt;
}

std::variant<LaunchPlan, PlanError> plan_at_n(const LaunchPlan& plan, std::int64_t n) {
  LaunchPlan out = plan;
  for (std::size_t i = 0; i < out.launches.size(); ++i) {
    LaunchSpec& l = out.launches[i];
    for (std::size_t d = 0; d < 3; ++d) {
      if (!l.grid_rule[d]) continue;
      const auto v = l.grid_rule[d]->at(n);
      if (!v || *v < 1 || static_cast<std::uint64_t>(*v) > kMaxGrid[d])
        return PlanError{fmt::format("plan: launches[{}].grid_rule[{}] gives no grid extent for n={}", i, d, n)};
      l.grid[d] = static_cast<std::uint32_t>(*v);
      l.grid_rule[d].reset();
    }
  }
  return out;
}

}  // namespace kd
