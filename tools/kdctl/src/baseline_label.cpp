#include "baseline_label.hpp"

#include <nlohmann/json.hpp>

namespace kd::kdctl {

std::string_view baseline_of(const OpKey& key) noexcept {
  return is_row(key) ? kFrameworkBaseline : kVendorBaseline;
}

std::string baseline_of(const OpKey& key, const eval::Verdict& verdict) {
  return verdict.baseline_name.empty() ? std::string(baseline_of(key)) : verdict.baseline_name;
}

std::string baseline_of(const OpKey& key, const Record& record) {
  if (!is_row(key)) return std::string(kVendorBaseline);
  const auto report = nlohmann::json::parse(record.validation_report, nullptr, /*allow_exceptions=*/false);
  if (report.is_object()) {
    const auto it = report.find("baseline_name");
    if (it != report.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
      return it->get<std::string>();
  }
  return std::string(kFrameworkBaseline);
}

}  // namespace kd::kdctl
