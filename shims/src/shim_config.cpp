#include "shim_config.hpp"

#include <cstdlib>

#include "common/env.hpp"

namespace kd::shim {
namespace {

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
