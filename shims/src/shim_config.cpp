#include "shim_config.hpp"

#include <cstdlib>
#include <string_view>

namespace kd::shim {
namespace {

// A switch is on for "1", "true", "yes" or "on", as libkdispatch reads its own (KD_GRAPH_WORKSPACE).
bool env_flag(const char* name) noexcept {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

ShimConfig load_config() {
  ShimConfig c;
  c.mode = env_flag("KD_DISABLE") ? ShimMode::pass_through : ShimMode::dispatch;
  c.stats = env_flag("KD_STATS") ? StatsReport::at_exit : StatsReport::off;
  if (const char* path = std::getenv("KD_RECORD")) c.record_path = path;
  return c;
}

}  // namespace

const ShimConfig& shim_config() noexcept {
  static const ShimConfig kDefaults{};
  // Never destroyed: interposed calls and the at-exit report may run after static destructors.
  static const ShimConfig* const config = []() noexcept -> const ShimConfig* {
    try {
      return new ShimConfig(load_config());
    } catch (...) {
      return nullptr;
    }
  }();
  return config != nullptr ? *config : kDefaults;
}

}  // namespace kd::shim
