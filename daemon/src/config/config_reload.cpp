#include "config/config_reload.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace kd::daemon {
namespace {

struct ReloadableKey {
  std::string_view name;
  void (*apply)(Config& live, const Config& fresh);
};

// The keys SIGHUP reloads (the header says why these and no others).
constexpr ReloadableKey kReloadableKeys[] = {
    {"log_level", [](Config& l, const Config& f) { l.log_level = f.log_level; }},
    {"allowed_uids", [](Config& l, const Config& f) { l.allowed_uids = f.allowed_uids; }},
    {"budget_rounds", [](Config& l, const Config& f) { l.budgets.rounds = f.budgets.rounds; }},
    {"budget_candidates", [](Config& l, const Config& f) { l.budgets.candidates = f.budgets.candidates; }},
    {"budget_wall_seconds", [](Config& l, const Config& f) { l.budgets.wall_seconds = f.budgets.wall_seconds; }},
    {"budget_llm_tokens", [](Config& l, const Config& f) { l.budgets.llm_tokens = f.budgets.llm_tokens; }},
    {"search_duty_cycle",
     [](Config& l, const Config& f) { l.search_policy.miss_duty_cycle = f.search_policy.miss_duty_cycle; }},
    {"prewarm_duty_cycle",
     [](Config& l, const Config& f) { l.search_policy.prewarm_duty_cycle = f.search_policy.prewarm_duty_cycle; }},
    {"frame_timeout_ms", [](Config& l, const Config& f) { l.frame_timeout = f.frame_timeout; }},
    {"max_clients", [](Config& l, const Config& f) { l.max_clients = f.max_clients; }},
    {"max_client_backlog_bytes",
     [](Config& l, const Config& f) { l.max_client_backlog_bytes = f.max_client_backlog_bytes; }},
    {"restart_backoff_ms", [](Config& l, const Config& f) { l.restart_backoff = f.restart_backoff; }},
    {"max_attempts", [](Config& l, const Config& f) { l.max_attempts = f.max_attempts; }},
};

const ReloadableKey* find_reloadable(std::string_view name) {
  const auto it = std::find_if(std::begin(kReloadableKeys), std::end(kReloadableKeys),
                               [&](const ReloadableKey& k) { return k.name == name; });
  return it == std::end(kReloadableKeys) ? nullptr : it;
}

}  // namespace

ReloadResult apply_reload(Config& live, const Config& fresh) {
  ReloadResult result;
  for (const Config::Origin& now : fresh.origins) {
    const auto before = std::find_if(live.origins.begin(), live.origins.end(),
                                     [&](const Config::Origin& o) { return o.key == now.key; });
    if (before != live.origins.end() && before->text == now.text) continue;
    const ReloadableKey* key = find_reloadable(now.key);
    if (key == nullptr) {
      result.restart_needed.push_back(now.key);
      continue;
    }
    key->apply(live, fresh);
    result.applied.push_back(fmt::format("{} = '{}'", now.key, now.text));
    if (before != live.origins.end())
      *before = now;
    else
      live.origins.push_back(now);
  }
  live.config_file = fresh.config_file;
  return result;
}

std::vector<std::string> reloadable_keys() {
  std::vector<std::string> names;
  for (const auto& k : kReloadableKeys) names.emplace_back(k.name);
  return names;
}

}  // namespace kd::daemon
