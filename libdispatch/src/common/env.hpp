// Boolean environment switches (KD_DISABLE, KD_STATS, KD_GRAPH_WORKSPACE, ...), read one way
// everywhere: "1", "true", "yes" or "on" turn a switch on; anything else, or unset, leaves it off.
#pragma once

#include <cstdlib>
#include <string_view>

namespace kd {

inline bool env_flag(const char* name) noexcept {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

}  // namespace kd
