#include "http/prometheus.hpp"

#include <fmt/format.h>

namespace kd::daemon {

void LabelledCounter::add(std::string_view value, std::uint64_t n) {
  const std::lock_guard lock(mu_);
  const auto it = values_.find(value);
  if (it == values_.end()) values_.emplace(std::string(value), n);
  else it->second += n;
}

std::map<std::string, std::uint64_t> LabelledCounter::values() const {
  const std::lock_guard lock(mu_);
  return {values_.begin(), values_.end()};
}

std::string escape_label(std::string_view value) {
  std::string out;
  for (const char ch : value) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void append_metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                   std::uint64_t value) {
  append_family(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

void append_labelled_counter(std::string& out, std::string_view name, std::string_view help,
                             std::string_view label, const std::map<std::string, std::uint64_t>& values) {
  append_family(out, name, "counter", help);
  for (const auto& [value, n] : values) out += fmt::format("{}{{{}=\"{}\"}} {}\n", name, label, escape_label(value), n);
}

}  // namespace kd::daemon
