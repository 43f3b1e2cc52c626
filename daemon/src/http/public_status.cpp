#include "http/public_status.hpp"

#include <string>
#include <string_view>

namespace kd::daemon {

nlohmann::json public_status(const nlohmann::json& status) {
  static constexpr std::string_view kPublic[] = {
      "daemon",      "uptime_s",   "generation",          "jobs",
      "queue_depth", "clients",    "subscribers",         "transactions_committed",
      "clients_reporting", "client_totals"};
  nlohmann::json out = nlohmann::json::object();
  for (const std::string_view field : kPublic) {
    const auto it = status.find(std::string(field));
    if (it != status.end()) out[std::string(field)] = *it;
  }
  if (const auto backend = status.find("search_backend"); backend != status.end())
    out["search_backend"] = {{"available", backend->value("available", false)}};
  return out;
}

}  // namespace kd::daemon
