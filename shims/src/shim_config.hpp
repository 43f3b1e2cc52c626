// The shim's settings, read once from the environment on first use (see kConfigKeys).
#pragma once

#include <string>

namespace kd::shim {

enum class ShimMode : unsigned char { dispatch, pass_through };
enum class StatsReport : unsigned char { off, at_exit };

struct ShimConfig {
  ShimMode mode = ShimMode::dispatch;
  StatsReport stats = StatsReport::off;
  std::string record_path;  // empty: misses are not recorded
};

// Every environment variable the shim reads. KD_DISABLE=1: every call goes straight to the real
// library, nothing is keyed or counted beyond the pass-through count. KD_RECORD=FILE: each distinct
// missed key line is appended to FILE (the prewarm list of a run). KD_STATS=1: hits, misses and
// fallbacks by reason are printed to stderr at exit.
struct ConfigKey {
  const char* env;
  const char* meaning;
};
inline constexpr ConfigKey kConfigKeys[] = {
    {"KD_DISABLE", "1: pure pass-through to cuBLAS/cuBLASLt"},
    {"KD_RECORD", "FILE: append each distinct missed key line to FILE"},
    {"KD_STATS", "1: print hits, misses and fallbacks by reason to stderr at exit"},
};

// Read on first call, then fixed for the life of the process. Never throws (defaults on failure).
const ShimConfig& shim_config() noexcept;

}  // namespace kd::shim
